// Clients that try to make the server do work they are not entitled to: requests refused from
// their header cost no body read, and slow work never runs on the I/O thread.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// A chat template that takes as long as the test wants: render() reports that it started,
// then waits until released (or 15 s, so a server that blocks on it fails rather than hangs).
class GatedRenderer final : public tally::server::ChatRenderer {
 public:
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int started = 0;
    bool released = false;
  };
  explicit GatedRenderer(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  tally::Result<std::string> render(const std::vector<tally::ChatMessage>&,
                                    bool) const override {
    std::unique_lock<std::mutex> lock(gate_->mu);
    ++gate_->started;
    gate_->cv.notify_all();
    gate_->cv.wait_for(lock, std::chrono::seconds(15), [this] { return gate_->released; });
    return std::string("rendered");
  }
  std::string describe() const override { return "gated"; }

 private:
  std::shared_ptr<Gate> gate_;
};

const char* const kChatBody = R"({"max_tokens": 1, "messages": [{"role": "user", "content": "U"}]})";

TEST(PromptWorkers, HealthAnswersWhileATemplateRenders) {
  auto gate = std::make_shared<GatedRenderer::Gate>();
  TestServer server(TestServer::default_config(), std::make_unique<GatedRenderer>(gate));
  HttpClient chat(server.port());
  ASSERT_TRUE(chat.send("POST", "/v1/chat/completions", kChatBody));
  {
    std::unique_lock<std::mutex> lock(gate->mu);
    ASSERT_TRUE(gate->cv.wait_for(lock, std::chrono::seconds(10), [&] { return gate->started > 0; }));
  }
  // The render is in progress (the gate is shut): the I/O thread must still answer.
  EXPECT_EQ(server.get("/health").status, 200);
  EXPECT_EQ(server.post("/tokenize", R"({"prompt": "x"})").status, 200);
  {
    std::lock_guard<std::mutex> lock(gate->mu);
    EXPECT_FALSE(gate->released);
    gate->released = true;
    gate->cv.notify_all();
  }
  auto reply = chat.read_reply(10);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 200) << reply->body;
}

TEST(PromptWorkers, RateLimitComesBeforeTheTemplate) {
  auto gate = std::make_shared<GatedRenderer::Gate>();
  gate->released = true;
  auto config = TestServer::default_config();
  config.rate_limits.requests_per_minute = 1;
  TestServer server(config, std::make_unique<GatedRenderer>(gate));
  EXPECT_EQ(server.post("/v1/chat/completions", kChatBody).status, 200);
  EXPECT_EQ(server.post("/v1/chat/completions", kChatBody).status, 429);
  EXPECT_EQ(server.post("/tokenize", R"({"messages": [{"role": "user", "content": "U"}]})").status,
            429);
  std::lock_guard<std::mutex> lock(gate->mu);
  EXPECT_EQ(gate->started, 1);  // the refused requests cost no rendering
}

TEST(PromptWorkers, DetokenizeIsRateLimited) {
  auto config = TestServer::default_config();
  config.rate_limits.requests_per_minute = 1;
  TestServer server(config);
  EXPECT_EQ(server.post("/detokenize", R"({"tokens": [1]})").status, 200);
  EXPECT_EQ(server.post("/detokenize", R"({"tokens": [1]})").status, 429);
}

}  // namespace
