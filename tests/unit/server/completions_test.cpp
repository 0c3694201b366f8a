// Completions and chat over HTTP with a scripted engine: JSON bodies, SSE streams, usage,
// logprobs, n and lists of prompts, the engine's refusals, UTF-8 safety, and a client that
// hangs up mid-stream.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "test_server.h"

namespace {

using nlohmann::json;
using tally_test::FakeEngine;
using tally_test::HttpClient;
using tally_test::sse_events;
using tally_test::TestServer;

TEST(Completions, NonStreamedBody) {
  TestServer server;
  server.engine().set_script(FakeEngine::Script::of({"Hello", " world"}));
  auto r = server.post("/v1/completions",
                       R"({"model": "stories260K", "prompt": "Once", "max_tokens": 4})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories260K");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], "Hello worldHello world");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  const int prompt = static_cast<int>(server.engine().last_request().prompt.size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt);
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt + 4);
}

TEST(Completions, RequestReachesTheEngineAsAsked) {
  TestServer server;
  auto r = server.post("/v1/completions",
                       R"({"prompt": [1, 5, 9], "max_tokens": 3, "temperature": 0, "seed": 7,
                           "stop": ["x"], "ignore_eos": true, "min_tokens": 2, "n": 2,
                           "logit_bias": {"10": -100}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto req = server.engine().last_request();
  EXPECT_EQ(req.prompt, (std::vector<int32_t>{1, 5, 9}));  // ids used as given
  EXPECT_EQ(req.max_tokens, 3);
  EXPECT_EQ(req.sampling.temperature, 0.0f);
  EXPECT_EQ(req.sampling.seed, 7u);
  EXPECT_EQ(req.stop, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(req.ignore_eos);
  EXPECT_EQ(req.min_tokens, 2);
  EXPECT_EQ(req.n, 2);
  ASSERT_EQ(req.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(json::parse(r.body)["choices"].size(), 2u);
}

TEST(Completions, ListsOfPromptsAndEcho) {
  TestServer server;
  server.engine().set_script(FakeEngine::Script::of({"!"}));
  auto r = server.post("/v1/completions",
                       R"({"prompt": ["One", "Two"], "n": 2, "max_tokens": 2, "echo": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 4u);
  EXPECT_EQ(j["choices"][0]["text"], "One!!");
  EXPECT_EQ(j["choices"][1]["text"], "One!!");
  EXPECT_EQ(j["choices"][2]["text"], "Two!!");
  EXPECT_EQ(j["choices"][3]["index"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
}

TEST(Completions, StreamedChunksAndDone) {
  TestServer server;
  server.engine().set_script(FakeEngine::Script::of({"a", "b", "c"}));
  auto r = server.post("/v1/completions",
                       R"({"prompt": "x", "max_tokens": 3, "stream": true,
                           "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.header("Transfer-Encoding"), "chunked");
  const auto events = sse_events(r.body);
  ASSERT_EQ(events.size(), 6u) << r.body;  // 3 tokens, finish, usage, [DONE]
  std::string text;
  for (int i = 0; i < 3; ++i) {
    const auto c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "abc");
  EXPECT_EQ(json::parse(events[3])["choices"][0]["finish_reason"], "length");
  const auto usage = json::parse(events[4]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST(Completions, StopFinishReason) {
  TestServer server;
  server.engine().set_script(FakeEngine::Script::of({"a"}, 2));
  auto j = json::parse(server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 9})").body);
  EXPECT_EQ(j["choices"][0]["text"], "aa");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST(Completions, Logprobs) {
  TestServer server;
  auto j = json::parse(
      server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 2, "logprobs": 2})").body);
  const auto& lp = j["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 2u);
  EXPECT_FLOAT_EQ(lp["token_logprobs"][0].get<float>(), -0.5f);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"][1], lp["tokens"][0].get<std::string>().size());
}

TEST(Chat, NonStreamedAndStreamed) {
  TestServer server;
  server.engine().set_script(FakeEngine::Script::of({"Hi", "!"}));
  const std::string body = R"({"model": "stories260K", "max_tokens": 2, "logprobs": true,
      "top_logprobs": 1, "messages": [{"role": "user", "content": "hello"}]})";
  auto r = server.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi!");
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 1u);
  EXPECT_TRUE(j["choices"][0]["logprobs"]["content"][0]["bytes"].is_array());

  auto s = server.post(
      "/v1/chat/completions",
      R"({"max_tokens": 2, "stream": true, "messages": [{"role": "user", "content": "hello"}]})");
  const auto events = sse_events(s.body);
  ASSERT_EQ(events.size(), 5u) << s.body;  // role, 2 tokens, finish, [DONE]
  const auto first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(json::parse(events[1])["choices"][0]["delta"]["content"], "Hi");
  const auto last = json::parse(events[3]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_EQ(events[4], "[DONE]");
}

TEST(Chat, PromptIsTheRenderedConversation) {
  TestServer server;
  ASSERT_EQ(server
                .post("/v1/chat/completions",
                      R"({"max_tokens": 1, "messages": [{"role": "system", "content": "S"},
                            {"role": "user", "content": "U"}]})")
                .status,
            200);
  const auto& tok = server.engine().tokenizer();
  const auto prompt = server.engine().last_request().prompt;
  const std::string text = tok.decode(prompt, /*skip_special=*/false);
  EXPECT_NE(text.find("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                      "<|im_start|>assistant\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(prompt.front(), tok.bos());
}

TEST(Generation, ModelAndLimitErrors) {
  auto config = TestServer::default_config();
  config.max_tokens_limit = 10;
  TestServer server(config);
  auto unknown = server.post("/v1/completions", R"({"model": "gpt-4o", "prompt": "x"})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body)["error"]["code"], "model_not_found");
  EXPECT_EQ(json::parse(unknown.body)["error"]["param"], "model");
  auto too_many = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 11})");
  EXPECT_EQ(too_many.status, 400);
  EXPECT_NE(too_many.body.find("limit of 10"), std::string::npos) << too_many.body;
  auto ids = [](int n) {
    std::string list = "[";
    for (int i = 0; i < n; ++i) list += i ? ",5" : "5";
    return list + "]";
  };
  auto too_long = server.post("/v1/completions", R"({"prompt": )" + ids(300) + "}");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_NE(too_long.body.find("300 tokens"), std::string::npos) << too_long.body;
  EXPECT_NE(too_long.body.find("256 tokens"), std::string::npos) << too_long.body;
  EXPECT_EQ(json::parse(too_long.body)["error"]["param"], "prompt");
  auto over_context =
      server.post("/v1/completions", R"({"max_tokens": 10, "prompt": )" + ids(250) + "}");
  EXPECT_EQ(over_context.status, 400);
  EXPECT_NE(over_context.body.find("maximum context length is 256"), std::string::npos);
  EXPECT_NE(over_context.body.find("260 tokens (250 in the prompt, 10 for the completion)"),
            std::string::npos)
      << over_context.body;
  auto bad_id = server.post("/v1/completions", R"({"prompt": [1, 99999]})");
  EXPECT_EQ(bad_id.status, 400);
  EXPECT_NE(bad_id.body.find("outside the vocabulary"), std::string::npos);
  auto bad_bias = server.post("/v1/completions", R"({"prompt": "x", "logit_bias": {"99999": 1}})");
  EXPECT_EQ(bad_bias.status, 400);
  EXPECT_EQ(json::parse(bad_bias.body)["error"]["param"], "logit_bias");
  // min_tokens over max_tokens: the engine's rule (check_engine_request), named by the field.
  auto min_over_max =
      server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 4, "min_tokens": 5})");
  EXPECT_EQ(min_over_max.status, 400);
  EXPECT_NE(min_over_max.body.find("must not exceed"), std::string::npos) << min_over_max.body;
  EXPECT_EQ(json::parse(min_over_max.body)["error"]["param"], "min_tokens");
  EXPECT_EQ(server.engine().submitted_count(), 0);
}

TEST(Generation, EngineRefusalsMapToStatuses) {
  TestServer server;
  FakeEngine::Script full;
  full.refuse =
      tally::make_error(tally::ErrorCode::kResourceExhausted, "engine: queue full (1024 waiting)");
  server.engine().set_script(full);
  auto r = server.post("/v1/completions", R"({"prompt": "x", "stream": true})");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("queue full"), std::string::npos);
  EXPECT_FALSE(r.header("Retry-After").empty());
  FakeEngine::Script bad;
  bad.refuse = tally::make_error(tally::ErrorCode::kInvalidArgument, "engine: bad n");
  server.engine().set_script(bad);
  EXPECT_EQ(server.post("/v1/completions", R"({"prompt": "x"})").status, 400);
}

TEST(Generation, EngineErrorMidStream) {
  TestServer server;
  FakeEngine::Script failing;
  failing.fail_midway = true;
  server.engine().set_script(failing);
  auto r = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 5, "stream": true})");
  ASSERT_EQ(r.status, 200);
  const auto events = sse_events(r.body);
  ASSERT_GE(events.size(), 3u) << r.body;
  EXPECT_TRUE(json::parse(events[events.size() - 2]).contains("error"));
  EXPECT_EQ(events.back(), "[DONE]");
  auto plain = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 5})");
  EXPECT_EQ(plain.status, 500);
  EXPECT_NE(plain.body.find("scripted failure"), std::string::npos);
}

TEST(Generation, InvalidUtf8NeverBreaksJson) {
  TestServer server;
  // A character split over tokens, then bytes that are never valid.
  server.engine().set_script(
      FakeEngine::Script::of({"\xE2\x82", "\xAC", "\xFF", "ok", "\xF0\x9F"}));
  auto r = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 5})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], "\xE2\x82\xAC\xEF\xBF\xBDok\xEF\xBF\xBD");
  auto s = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 5, "stream": true})");
  std::string text;
  for (const auto& e : sse_events(s.body)) {
    if (e == "[DONE]") continue;
    text += json::parse(e)["choices"][0]["text"].get<std::string>();  // each chunk parses
  }
  EXPECT_EQ(text, "\xE2\x82\xAC\xEF\xBF\xBDok\xEF\xBF\xBD");
}

TEST(Generation, ClientHangUpCancelsTheEngineRequest) {
  TestServer server;
  FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(50);
  server.engine().set_script(slow);
  {
    HttpClient client(server.port());
    client.send("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 60, "stream": true})");
    ASSERT_TRUE(client.read_until("data: "));
  }  // hang up
  for (int i = 0; i < 200 && server.engine().running_count() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server.engine().cancelled_count(), 1);
  EXPECT_EQ(server.engine().running_count(), 0);
  EXPECT_EQ(server.get("/health").status, 200);
}

TEST(Generation, HangUpWhileWaitingForANonStreamedAnswerCancelsToo) {
  TestServer server;
  FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(50);
  server.engine().set_script(slow);
  {
    HttpClient client(server.port());
    client.send("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 60})");
    for (int i = 0; i < 200 && server.engine().running_count() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (int i = 0; i < 200 && server.engine().running_count() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server.engine().cancelled_count(), 1);
}

// shutdown(SHUT_WR) after a complete request only says "no more requests": the answer still
// comes (after an interim 100 Continue, the server's probe for a client that is really gone),
// then the server closes. A client that closes for good is still cancelled (tests above).
TEST(Generation, HalfClosedClientStillGetsItsResponse) {
  TestServer server;
  FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(20);
  server.engine().set_script(slow);
  for (const bool stream : {false, true}) {
    HttpClient client(server.port());
    const std::string body = std::string(R"({"prompt": "x", "max_tokens": 5, "stream": )") +
                             (stream ? "true}" : "false}");
    ASSERT_TRUE(client.send("POST", "/v1/completions", body));
    client.shutdown_send();
    EXPECT_TRUE(client.wait_closed(10));
    const std::string& got = client.received();
    EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
    EXPECT_NE(got.find(stream ? "[DONE]" : "\"finish_reason\""), std::string::npos) << got;
  }
  EXPECT_EQ(server.engine().cancelled_count(), 0);
}

TEST(Generation, RateLimitsAnswer429WithRetryAfter) {
  auto config = TestServer::default_config();
  config.rate_limits.requests_per_minute = 2;
  TestServer server(config);
  EXPECT_EQ(server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 1})").status, 200);
  EXPECT_EQ(server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 1})").status, 200);
  auto refused = server.post("/v1/completions", R"({"prompt": "x", "max_tokens": 1})");
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.header("Retry-After"), "30");
  EXPECT_EQ(json::parse(refused.body)["error"]["type"], "rate_limit_exceeded");
}

TEST(Generation, TokenRateLimit) {
  auto config = TestServer::default_config();
  config.rate_limits.tokens_per_minute = 40;
  TestServer server(config);
  EXPECT_EQ(server.post("/v1/completions", R"({"prompt": [1, 2], "max_tokens": 30})").status, 200);
  auto refused = server.post("/v1/completions", R"({"prompt": [1, 2], "max_tokens": 30})");
  EXPECT_EQ(refused.status, 429);
  EXPECT_NE(refused.body.find("tokens"), std::string::npos);
}

TEST(Shutdown, DrainLetsRunningStreamsFinish) {
  TestServer server;
  FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(10);
  server.engine().set_script(slow);
  HttpClient client(server.port());
  client.send("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 30, "stream": true})");
  ASSERT_TRUE(client.read_until("data: "));
  std::thread stopper([&] { server.stop(); });
  auto reply = client.read_reply(10);
  stopper.join();
  ASSERT_TRUE(reply);
  EXPECT_NE(reply->body.find("[DONE]"), std::string::npos);
  EXPECT_NE(reply->body.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_TRUE(server.stopped());
  EXPECT_FALSE(HttpClient(server.port()).connected());  // no longer accepting
}

TEST(Shutdown, DrainTimeoutAbortsWhatIsLeft) {
  auto config = TestServer::default_config();
  config.drain_timeout = 0.2;
  TestServer server(config);
  FakeEngine::Script slow;
  slow.per_token = std::chrono::milliseconds(50);
  server.engine().set_script(slow);
  HttpClient client(server.port());
  client.send("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 60, "stream": true})");
  ASSERT_TRUE(client.read_until("data: "));
  const auto start = std::chrono::steady_clock::now();
  server.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(client.received().size(), 0u);
  EXPECT_EQ(server.engine().cancelled_count(), 1);
}

}  // namespace
