// Clients that try to make the server do work they are not entitled to: requests refused from
// their header cost no body read.
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_server.h"

namespace {

using nlohmann::json;
using tally_test::HttpClient;
using tally_test::TestServer;

constexpr size_t kFourMiB = 4 << 20;

// The header of a POST announcing a 4 MiB body, none of which is sent.
std::string head_of_large_post(const std::string& path, const std::string& extra_header = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" +
         extra_header + "Content-Length: " + std::to_string(kFourMiB) + "\r\n\r\n";
}

// Bodies up to 8 MiB, and a body read timeout far beyond the wait for the answer: a server
// that waited for the announced body would not answer in time.
tally::server::ServerConfig config_for_large_bodies() {
  auto config = TestServer::default_config();
  config.http.max_body_bytes = 8 << 20;
  config.http.read_timeout = 60;
  return config;
}

TEST(HeadCheck, BadKeyIs401BeforeTheBodyIsRead) {
  auto config = config_for_large_bodies();
  config.api_keys = {"sk-good"};
  TestServer server(config);
  for (const std::string auth : {"", "Authorization: Bearer sk-bad\r\n"}) {
    HttpClient client(server.port());
    ASSERT_TRUE(client.send_raw(head_of_large_post("/v1/completions", auth)));
    auto reply = client.read_reply(/*timeout=*/5);
    ASSERT_TRUE(reply.has_value()) << "no answer before the body: " << client.received();
    EXPECT_EQ(reply->status, 401) << reply->body;
    EXPECT_EQ(reply->header("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(reply->header("Connection"), "close");  // the unread body ends the connection
    EXPECT_TRUE(client.wait_closed(5));
  }
  // A good key goes on to read the body.
  HttpClient client(server.port());
  const std::string body = R"({"prompt": "x", "max_tokens": 1})";
  ASSERT_TRUE(client.send_raw("POST /v1/completions HTTP/1.1\r\nHost: test\r\n"
                              "Authorization: Bearer sk-good\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_FALSE(client.read_reply(/*timeout=*/0.3).has_value());  // waits for the body
  ASSERT_TRUE(client.send_raw(body));
  auto reply = client.read_reply(5);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200) << reply->body;
}

TEST(HeadCheck, RateLimitedClientIs429BeforeTheBodyIsRead) {
  auto config = config_for_large_bodies();
  config.rate_limits.requests_per_minute = 1;
  TestServer server(config);
  EXPECT_EQ(server.post("/tokenize", R"({"prompt": "x"})").status, 200);  // the one allowed
  HttpClient client(server.port());
  ASSERT_TRUE(client.send_raw(head_of_large_post("/v1/completions")));
  auto reply = client.read_reply(/*timeout=*/5);
  ASSERT_TRUE(reply.has_value()) << "no answer before the body: " << client.received();
  EXPECT_EQ(reply->status, 429) << reply->body;
  EXPECT_FALSE(reply->header("Retry-After").empty());
  EXPECT_EQ(json::parse(reply->body)["error"]["type"], "rate_limit_exceeded");
  // Routes outside the API (health) are not rate limited.
  EXPECT_EQ(server.get("/health").status, 200);
}

}  // namespace
