// `tally serve` end to end, driven by curl: the raw protocol (JSON bodies, SSE, headers),
// malformed input answered with the right status and message while the server keeps
// serving, auth, the access log, /metrics, SIGTERM, and --help against docs/server.md.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve_process.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using nlohmann::json;
using tally_test::curl;
using tally_test::CurlReply;
using tally_test::ServeProcess;

std::string sse_text(const std::string& body, const char* field) {
  std::string text;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    const std::string data = body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const auto chunk = json::parse(data);
    for (const auto& c : chunk["choices"]) {
      if (std::string(field) == "text") {
        text += c["text"].get<std::string>();
      } else if (c["delta"].contains("content")) {
        text += c["delta"]["content"].get<std::string>();
      }
    }
  }
  return text;
}

void expect_error(const CurlReply& r, int status, const std::string& needle,
                  const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
}

TEST(ServeCurl, RawProtocol) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string url = server.url();
  // The start-up ledger (64 MiB of f16 KV, the default, at 640 B a token) and the pool
  // /metrics reports.
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("memory ledger"), std::string::npos) << err;
  EXPECT_NE(err.find("kv cache  63.99 MiB = 6553 blocks x 16 tokens = 104848 tokens x 640 B"),
            std::string::npos)
      << err;
  EXPECT_NE(curl(url + "/metrics", "GET").body.find("tally:kv_cache_total_blocks 6553"),
            std::string::npos);
  EXPECT_EQ(curl(url + "/health", "GET").status, 200);
  EXPECT_EQ(curl(url + "/ready", "GET").status, 200);
  auto models = json::parse(curl(url + "/v1/models", "GET").body);
  EXPECT_EQ(models["data"][0]["id"], "stories260K");
  EXPECT_EQ(models["data"][0]["max_model_len"], 512);

  auto tok = json::parse(curl(url + "/tokenize", "POST", R"({"prompt": "Once upon a time"})").body);
  auto detok = json::parse(curl(url + "/detokenize", "POST", json{{"tokens", tok["tokens"]}}.dump()).body);
  EXPECT_EQ(detok["prompt"], "Once upon a time");

  const std::string req = R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 20, "temperature": 0)";
  auto plain = curl(url + "/v1/completions", "POST", req + "}", {"X-Request-Id: e2e-trace-1"});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_NE(plain.headers.find("X-Request-Id: e2e-trace-1"), std::string::npos) << plain.headers;
  const auto body = json::parse(plain.body);
  const std::string text = body["choices"][0]["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(body["usage"]["prompt_tokens"], tok["count"]);

  auto streamed = curl(url + "/v1/completions", "POST", req + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.headers.find("text/event-stream"), std::string::npos);
  EXPECT_NE(streamed.body.find("data: [DONE]\n\n"), std::string::npos);
  EXPECT_EQ(sse_text(streamed.body, "text"), text);  // same greedy text, streamed

  const std::string chat = R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12, "temperature": 0)";
  auto chat_plain = json::parse(curl(url + "/v1/chat/completions", "POST", chat + "}").body);
  auto chat_stream = curl(url + "/v1/chat/completions", "POST", chat + R"(, "stream": true})");
  EXPECT_EQ(sse_text(chat_stream.body, "content"), chat_plain["choices"][0]["message"]["content"]);

  EXPECT_EQ(server.stop(SIGTERM), 0);
  // The access log: one JSON line per exchange, with the client's request id.
  const std::string log = server.access_log();
  EXPECT_NE(log.find(R"("request_id":"e2e-trace-1")"), std::string::npos) << log;
  size_t lines = 0;
  for (size_t p = 0; (p = log.find('\n', p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, 10u) << log;
}

TEST(ServeCurl, MalformedInputGetsTheRightAnswerAndTheServerGoesOn) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string c = server.url() + "/v1/completions";
  expect_error(curl(c, "POST", R"({"prompt": "x", )"), 400, "not valid JSON");
  expect_error(curl(c, "POST", R"({"prompt": "x", "max_tokens": "many"})"), 400,
               "'max_tokens' must be an integer", "max_tokens");
  expect_error(curl(c, "POST", R"({"prompt": {"a": 1}})"), 400, "'prompt' must be", "prompt");
  expect_error(curl(c, "POST", R"({"prompt": "x", "max_tokens": -1})"), 400, "got -1", "max_tokens");
  expect_error(curl(c, "POST", R"({"prompt": "x", "max_tokens": 1000000000000})"), 400,
               "max_tokens", "max_tokens");
  expect_error(curl(c, "POST", R"({"prompt": "x", "max_tokens": 600})"), 400,
               "maximum context length is 512 tokens", "max_tokens");
  expect_error(curl(c, "POST", "{\"prompt\": \"caf\xC3\x28\"}"), 400, "not valid JSON");
  expect_error(curl(c, "POST", R"({"model": "gpt-4", "prompt": "x"})"), 404,
               "The model `gpt-4` does not exist", "model");
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += "the cat sat. ";
  expect_error(curl(c, "POST", json{{"prompt", long_prompt}}.dump()), 400,
               "this model's context is 512 tokens", "prompt");
  const std::string huge = R"({"prompt": ")" + std::string(5 << 20, 'a') + R"("})";
  expect_error(curl(c, "POST", huge), 413, "larger than the limit");
  expect_error(curl(server.url() + "/v1/nope", "GET"), 404, "no route");
  EXPECT_EQ(curl(server.url() + "/health", "GET").status, 200);
  auto after = curl(c, "POST", R"({"prompt": "x", "max_tokens": 3})");
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

// One sequence runs, one waits (--max-queue 1): the other requests, sent at the same moment
// (one curl, six transfers opened at once), are shed with 503 at once instead of queueing
// without bound. A request of 400 tokens runs for tens of milliseconds even on a fast
// machine, far longer than the six connections take to arrive.
TEST(ServeCurl, LoadIsShedWhenTheQueueIsFull) {
  ServeProcess server({"--max-seqs", "1", "--max-queue", "1"});
  ASSERT_TRUE(server.started());
  const std::string body = R"({"prompt": "Once", "max_tokens": 400, "ignore_eos": true})";
  std::string cmd = "curl -s --parallel --parallel-immediate --parallel-max 6 "
                    "-w '%{http_code}\\n' --max-time 60 -H 'Content-Type: application/json' -d ";
  cmd += tally_test::shell_quote(body);
  for (int i = 0; i < 6; ++i) cmd += " -o /dev/null " + server.url() + "/v1/completions";
  const auto r = tally_test::run_command(cmd);
  int ok = 0, shed = 0;
  std::istringstream codes(r.out);
  for (std::string code; std::getline(codes, code);) {
    ok += code == "200";
    shed += code == "503";
  }
  EXPECT_EQ(ok + shed, 6) << r.out;
  EXPECT_GE(ok, 1) << r.out;  // the running one (and the queued one, if it came in time)
  EXPECT_GE(shed, 3) << r.out;
  EXPECT_EQ(curl(server.url() + "/health", "GET").status, 200);
}

TEST(ServeCurl, ApiKeys) {
  ServeProcess server({"--api-key", "sk-e2e", "--open-health"});
  ASSERT_TRUE(server.started());
  const std::string m = server.url() + "/v1/models";
  expect_error(curl(m, "GET"), 401, "API key");
  expect_error(curl(m, "GET", "", {"Authorization: Bearer wrong"}), 401, "API key");
  EXPECT_EQ(curl(m, "GET", "", {"Authorization: Bearer sk-e2e"}).status, 200);
  EXPECT_EQ(curl(server.url() + "/health", "GET").status, 200);  // --open-health
  EXPECT_EQ(curl(server.url() + "/metrics", "GET").status, 401);
}

TEST(ServeCurl, MetricsPassPromtool) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  curl(server.url() + "/v1/completions", "POST", R"({"prompt": "x", "max_tokens": 4})");
  auto metrics = curl(server.url() + "/metrics", "GET");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("tally:request_success_total"), std::string::npos);
  EXPECT_NE(metrics.body.find("tally:kv_cache_free_blocks"), std::string::npos);
  if (tally_test::run_command("command -v promtool").exit_code != 0) {
    if (tally_test::in_ci()) FAIL() << "CI needs promtool (scripts/setup.sh: prometheus)";
    GTEST_SKIP() << "promtool not installed";
  }
  const std::string path = tally_test::temp_dir() + "/metrics.txt";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(metrics.body.data(), 1, metrics.body.size(), f);
  std::fclose(f);
  std::string promtool = "promtool check metrics < ";
  promtool += tally_test::shell_quote(path);
  auto check = tally_test::run_command(promtool);
  // 0, or 3 with only the lint against colons in names (vLLM's names have them too); 1 would
  // be a parse error.
  std::istringstream lines(check.out + check.err);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      EXPECT_NE(line.find("should not contain ':'"), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 3) << check.exit_code;
}

TEST(ServeCurl, SigtermFinishesRunningStreamsThenExitsZero) {
  ServeProcess server({"--drain-timeout", "20"});
  ASSERT_TRUE(server.started());
  const std::string cmd = "curl -sS -N --max-time 60 -H 'Content-Type: application/json' -d " +
                          tally_test::shell_quote(R"({"prompt": "Once", "max_tokens": 200, "n": 4, "ignore_eos": true, "stream": true})") +
                          " " + server.url() + "/v1/completions";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  bool signalled = false;
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) {
    out.append(buf, n);
    if (!signalled && out.find("data: ") != std::string::npos) {
      signalled = true;
      EXPECT_TRUE(server.running());
      server.send_signal(SIGTERM);  // mid-stream: the stream must still end normally
    }
  }
  ::pclose(pipe);
  EXPECT_NE(out.find("data: [DONE]"), std::string::npos) << out.substr(0, 500);
  EXPECT_EQ(out.find("\"finish_reason\":\"abort\""), std::string::npos);
  for (int i = 0; i < 200 && server.running(); ++i) usleep(50000);
  EXPECT_EQ(server.stop(SIGTERM), 0) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("draining"), std::string::npos) << server.stderr_text();
}

TEST(ServeCurl, HelpListsEveryFlagAndDocsDescribeThem) {
  auto help = tally_test::run_command(tally_test::tally_binary() + " serve --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  const std::string doc = tally_test::read_file(tally_test::repo_path("docs/server.md"));
  const std::regex flag(R"((--[a-z][a-z0-9-]+))");
  int count = 0;
  for (std::sregex_iterator it(help.out.begin(), help.out.end(), flag), end; it != end; ++it) {
    const std::string name = (*it)[1];
    if (name == "--help") continue;
    ++count;
    EXPECT_NE(doc.find("`" + name), std::string::npos) << name << " is not in docs/server.md";
  }
  for (const char* required :
       {"--host", "--port", "--model", "--served-model-name", "--api-key", "--api-keys-file",
        "--open-health", "--open-metrics", "--rate-limit-rpm", "--rate-limit-tpm",
        "--max-body-bytes", "--max-tokens-limit", "--max-queue", "--drain-timeout",
        "--header-timeout", "--read-timeout", "--threads", "--max-batched-tokens", "--max-seqs",
        "--max-model-len", "--block-size", "--kv-type", "--kv-cache-memory", "--memory-budget",
        "--scheduler"}) {
    EXPECT_NE(help.out.find(required), std::string::npos) << required;
  }
  EXPECT_GE(count, 25);
}

TEST(ServeCurl, BadFlagsExitWithUsageErrors) {
  auto r = tally_test::run_command(tally_test::tally_binary() + " serve --kv-type f8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--kv-type"), std::string::npos) << r.err;
  auto busy = tally_test::run_command(tally_test::tally_binary() + " serve --host not-an-ip");
  EXPECT_EQ(busy.exit_code, 2);
  EXPECT_NE(busy.err.find("--host"), std::string::npos) << busy.err;
}

}  // namespace
