// Clients that try to make the server do work they are not entitled to: requests refused from
// their header cost no body read, and slow work never runs on the I/O thread.
#include <pthread.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/queued_bytes.h"
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
    std::string thread_name;  // of the thread that rendered last
  };
  explicit GatedRenderer(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  tally::Result<std::string> render(const std::vector<tally::ChatMessage>&,
                                    bool) const override {
    std::unique_lock<std::mutex> lock(gate_->mu);
    std::array<char, 16> name{};
    pthread_getname_np(pthread_self(), name.data(), name.size());
    gate_->thread_name = name.data();
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

TEST(PromptWorkers, TemplatesRenderOnTheNamedPromptThreads) {
  auto gate = std::make_shared<GatedRenderer::Gate>();
  gate->released = true;
  TestServer server(TestServer::default_config(), std::make_unique<GatedRenderer>(gate));
  EXPECT_EQ(server.post("/v1/chat/completions", kChatBody).status, 200);
  std::lock_guard<std::mutex> lock(gate->mu);
  EXPECT_EQ(gate->thread_name.rfind("tally-prompt-", 0), 0u) << gate->thread_name;
}

TEST(PromptWorkers, DetokenizeIsRateLimited) {
  auto config = TestServer::default_config();
  config.rate_limits.requests_per_minute = 1;
  TestServer server(config);
  EXPECT_EQ(server.post("/detokenize", R"({"tokens": [1]})").status, 200);
  EXPECT_EQ(server.post("/detokenize", R"({"tokens": [1]})").status, 429);
}

// The figure docs/server.md states: a maximal request (n=16 on a 128k vocabulary, an 8k
// prompt, 16 KiB of stop strings, 300 logit-bias entries) is charged under 34 MiB, so the
// default budget of 1 GiB queues 31 of them.
TEST(QueuedBytes, MaximalRequestFitsTheStatedBudget) {
  const int64_t maximal = tally::server::queued_request_bytes({8192, 16, 131072, 300, 16 << 10});
  EXPECT_LE(maximal, int64_t{34} << 20);
  EXPECT_GE(maximal, int64_t{16} * 131072 * 16);  // at least the samplers' candidates + counts
  const tally::server::ServerConfig defaults;
  EXPECT_EQ(defaults.max_queued_bytes / maximal, 31);
}

TEST(QueuedBytes, SpentBudgetAnswers503UntilAQueuedRequestRuns) {
  const std::string body = R"({"prompt": [1, 2, 3], "max_tokens": 1, "stream": true})";
  auto config = TestServer::default_config();
  TestServer probe;  // for the vocabulary size
  const int64_t one = tally::server::queued_request_bytes(
      {3, 1, probe.engine().tokenizer().n_vocab(), 0, 0});
  config.max_queued_bytes = 2 * one + one / 2;  // room for two
  TestServer server(config);
  tally_test::FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(4000);  // no first token (no release) for 4 s
  server.engine().set_script(slow);
  HttpClient first(server.port());
  HttpClient second(server.port());
  for (HttpClient* client : {&first, &second}) {
    ASSERT_TRUE(client->send("POST", "/v1/completions", body));
    ASSERT_TRUE(client->read_until("HTTP/1.1 200", 10)) << client->received();
  }
  auto refused = server.post("/v1/completions", body);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("--max-queued-bytes"), std::string::npos) << refused.body;
  // More than the whole budget alone: waiting would not help.
  auto too_big = server.post("/v1/completions",
                             R"({"prompt": [1, 2, 3], "max_tokens": 1, "n": 16})");
  EXPECT_EQ(too_big.status, 400) << too_big.body;
  // The first request's first token: it runs, its charge is returned.
  ASSERT_TRUE(first.read_until("data: ", 10)) << first.received();
  HttpClient third(server.port());
  ASSERT_TRUE(third.send("POST", "/v1/completions", body));
  EXPECT_TRUE(third.read_until("HTTP/1.1 200", 10)) << third.received();
}

}  // namespace
