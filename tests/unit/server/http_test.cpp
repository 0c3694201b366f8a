// The HTTP layer and the small endpoints, against a real server on loopback (fake engine):
// routing, keep-alive, request ids, limits and timeouts, auth, models, tokenize.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_server.h"

namespace {

using nlohmann::json;
using tally_test::HttpClient;
using tally_test::TestServer;

json body_json(const tally_test::HttpReply& r) { return json::parse(r.body); }

void expect_api_error(const tally_test::HttpReply& r, int status, const std::string& needle) {
  EXPECT_EQ(r.status, status) << r.body;
  ASSERT_FALSE(r.body.empty());
  const auto j = body_json(r);
  ASSERT_TRUE(j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"].contains("type"));
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
  EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
}

TEST(HttpServer, HealthReadyAndModels) {
  TestServer server;
  auto health = server.get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(server.get("/ready").status, 200);
  auto models = server.get("/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  const auto j = body_json(models);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "stories260K");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["max_model_len"], 256);
  // The model's id, not the server's file path (test_server.cpp loads models/stories260K.gguf).
  EXPECT_EQ(j["data"][0]["root"], "stories260K");
  EXPECT_EQ(models.body.find(".gguf"), std::string::npos) << models.body;
  EXPECT_EQ(body_json(server.get("/v1/models/stories260K"))["id"], "stories260K");
  expect_api_error(server.get("/v1/models/gpt-4"), 404, "gpt-4");
}

TEST(HttpServer, UnknownRoutesAndMethods) {
  TestServer server;
  expect_api_error(server.get("/v2/nothing"), 404, "no route for GET /v2/nothing");
  auto wrong = server.get("/v1/completions");
  expect_api_error(wrong, 405, "allowed: POST");
  EXPECT_EQ(wrong.header("Allow"), "POST");
}

TEST(HttpServer, KeepAliveAndRequestIds) {
  TestServer server;
  HttpClient client(server.port());
  ASSERT_TRUE(client.send("GET", "/health", "", {"X-Request-Id: my-trace-7"}));
  auto first = client.read_reply();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->header("X-Request-Id"), "my-trace-7");
  EXPECT_EQ(first->header("Connection"), "keep-alive");
  ASSERT_TRUE(client.send("GET", "/health", "", {"X-Request-Id: bad id with spaces"}));
  auto second = client.read_reply();  // same connection
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(second->header("X-Request-Id").rfind("req-", 0), 0u);
  ASSERT_TRUE(client.send("GET", "/health", "", {"Connection: close"}));
  auto third = client.read_reply();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->header("Connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer server;
  HttpClient client(server.port());
  client.send_raw(
      "GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: one\r\n\r\n"
      "GET /ready HTTP/1.1\r\nHost: x\r\nX-Request-Id: two\r\n\r\n");
  auto a = client.read_reply();
  auto b = client.read_reply();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->header("X-Request-Id"), "one");
  EXPECT_EQ(b->header("X-Request-Id"), "two");
}

TEST(HttpServer, MalformedRequestsAnswer400AndTheServerGoesOn) {
  TestServer server;
  HttpClient client(server.port());
  client.send_raw("THIS IS NOT HTTP\r\n\r\n");
  auto reply = client.read_reply();
  ASSERT_TRUE(reply);
  expect_api_error(*reply, 400, "malformed HTTP request");
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(server.get("/health").status, 200);
}

TEST(HttpServer, BodyAndHeaderLimits) {
  TestServer server;  // 64 KiB bodies
  expect_api_error(server.post("/v1/completions", std::string(100 << 10, 'x')), 413,
                   "larger than the limit of 65536 bytes");
  // Announced too big: refused before the body is read.
  HttpClient client(server.port());
  client.send_raw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n"
      "Expect: 100-continue\r\n\r\n");
  auto reply = client.read_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 413);
  expect_api_error(server.get("/health", {"X-Big: " + std::string(20 << 10, 'h')}), 431,
                   "header larger");
  EXPECT_EQ(server.get("/health").status, 200);
}

TEST(HttpServer, SlowClientsTimeOut) {
  auto config = TestServer::default_config();
  config.http.header_timeout = 0.3;
  config.http.read_timeout = 0.3;
  TestServer server(config);
  HttpClient slow_header(server.port());
  slow_header.send_raw("GET /health HTTP/1.1\r\nHost: x\r\n");  // never finishes
  auto r1 = slow_header.read_reply(5);
  ASSERT_TRUE(r1);
  expect_api_error(*r1, 408, "header");
  EXPECT_TRUE(slow_header.wait_closed());

  HttpClient slow_body(server.port());
  slow_body.send_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
  auto r2 = slow_body.read_reply(5);
  ASSERT_TRUE(r2);
  expect_api_error(*r2, 408, "body");
  EXPECT_EQ(server.get("/health").status, 200);
}

TEST(HttpServer, IdleKeepAliveConnectionsClose) {
  auto config = TestServer::default_config();
  config.http.idle_timeout = 0.3;
  TestServer server(config);
  HttpClient client(server.port());
  ASSERT_TRUE(client.send("GET", "/health"));
  ASSERT_TRUE(client.read_reply());
  EXPECT_TRUE(client.wait_closed(3));
}

// Idle connections cost no thread: as many as the open-file limit allows (two descriptors
// each here, client and server side, in one process), up to 2000.
TEST(HttpServer, ThousandsOfIdleConnections) {
  TestServer server;  // listen() raises the soft open-file limit to the hard one
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  const int n = static_cast<int>(std::min<rlim_t>(2000, (limit.rlim_cur - 64) / 2));
  ASSERT_GE(n, 300) << "open-file limit " << limit.rlim_cur;
  std::vector<std::unique_ptr<HttpClient>> idle;
  for (int i = 0; i < n; ++i) {
    idle.push_back(std::make_unique<HttpClient>(server.port()));
    ASSERT_TRUE(idle.back()->connected()) << i;
  }
  EXPECT_EQ(server.get("/health").status, 200);  // still answering
  for (int i = 0; i < n; i += n / 10) {
    ASSERT_TRUE(idle[i]->send("GET", "/health"));
    auto r = idle[i]->read_reply();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
  }
}

// Past --max-connections a new connection is answered 503 and closed; once one closes, a new
// one is served again.
TEST(HttpServer, ConnectionCapAnswers503AndCloses) {
  auto config = TestServer::default_config();
  config.http.max_connections = 2;
  TestServer server(config);
  auto first = std::make_unique<HttpClient>(server.port());
  HttpClient second(server.port());
  ASSERT_TRUE(first->connected() && second.connected());
  ASSERT_TRUE(second.send("GET", "/health"));  // both are open sessions by now
  ASSERT_TRUE(second.read_reply());
  HttpClient third(server.port());
  auto refused = third.read_reply();
  ASSERT_TRUE(refused);
  expect_api_error(*refused, 503, "too many connections");
  EXPECT_TRUE(third.wait_closed(3));
  first.reset();
  for (int i = 0; i < 100; ++i) {  // the server notices the close on its own time
    auto r = server.get("/health");
    if (r.status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "a connection closed, yet new ones are still refused";
}

TEST(Auth, KeysGuardTheApi) {
  auto config = TestServer::default_config();
  config.api_keys = {"sk-one", "sk-two"};
  TestServer server(config);
  auto missing = server.get("/v1/models");
  expect_api_error(missing, 401, "API key");
  EXPECT_EQ(missing.header("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(body_json(missing)["error"]["code"], "invalid_api_key");
  expect_api_error(server.get("/v1/models", {"Authorization: Bearer sk-three"}), 401, "API key");
  EXPECT_EQ(server.get("/v1/models", {"Authorization: Bearer sk-two"}).status, 200);
  // Closed by default once keys exist; the flags open them.
  EXPECT_EQ(server.get("/health").status, 401);
  EXPECT_EQ(server.get("/metrics").status, 401);
  EXPECT_EQ(server.get("/metrics", {"Authorization: Bearer sk-one"}).status, 200);
}

TEST(Auth, OpenHealthAndMetrics) {
  auto config = TestServer::default_config();
  config.api_keys = {"sk-one"};
  config.open_health = true;
  config.open_metrics = true;
  TestServer server(config);
  EXPECT_EQ(server.get("/health").status, 200);
  EXPECT_EQ(server.get("/ready").status, 200);
  auto metrics = server.get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("test_finished_total"), std::string::npos);
  EXPECT_EQ(metrics.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(server.post("/tokenize", R"({"prompt": "x"})").status, 401);
}

TEST(Tokenize, RoundTrip) {
  TestServer server;
  auto tok =
      server.post("/tokenize", R"({"prompt": "Once upon a time", "return_token_strs": true})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  const auto j = body_json(tok);
  ASSERT_TRUE(j["tokens"].is_array());
  EXPECT_EQ(j["count"], j["tokens"].size());
  EXPECT_EQ(j["max_model_len"], 256);
  EXPECT_EQ(j["tokens"][0], server.engine().tokenizer().bos());
  EXPECT_EQ(j["token_strs"].size(), j["tokens"].size());
  json ids = j["tokens"];
  auto detok = server.post("/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_EQ(detok.status, 200) << detok.body;
  EXPECT_NE(body_json(detok)["prompt"].get<std::string>().find("Once upon a time"),
            std::string::npos);
  auto no_bos =
      body_json(server.post("/tokenize", R"({"prompt": "Once", "add_special_tokens": false})"));
  EXPECT_NE(no_bos["tokens"][0], server.engine().tokenizer().bos());
  auto chat =
      body_json(server.post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})"));
  EXPECT_GT(chat["count"].get<int>(), 5);
}

TEST(Tokenize, Errors) {
  TestServer server;
  expect_api_error(server.post("/tokenize", R"({"prompt": 3})"), 400, "'prompt' must be a string");
  expect_api_error(server.post("/tokenize", R"({"prompt": "x", "model": "nope"})"), 404, "nope");
  expect_api_error(server.post("/detokenize", R"({"tokens": [100000]})"), 400,
                   "outside the vocabulary");
  expect_api_error(server.post("/detokenize", "{"), 400, "not valid JSON");
}

}  // namespace
