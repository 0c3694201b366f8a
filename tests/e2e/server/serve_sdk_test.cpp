// `tally serve` end to end through the official openai npm package (tests/e2e/node): the
// SDK's completions, chat, streaming and errors; 100 concurrent streaming clients whose greedy
// outputs equal their solo runs; a client that disconnects mid-stream gets its request aborted
// and its KV blocks freed, as /metrics shows.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve_process.h"
#include "support/test_data.h"

namespace {

using nlohmann::json;
using tally_test::run_node;
using tally_test::ServeProcess;

json run_script(const ServeProcess& server, const std::string& script,
                std::vector<std::string> env = {}) {
  env.push_back("TALLY_URL=" + server.url());
  const auto r = run_node(script, env);
  EXPECT_EQ(r.exit_code, 0) << script << ":\n" << r.err << r.out;
  return json::parse(r.out, nullptr, false);
}

TEST(ServeSdk, CompletionsChatAndStreaming) {
  TALLY_REQUIRE_NODE_SDK();
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const json out = run_script(server, "sdk_basics.mjs");
  ASSERT_TRUE(out.is_object());
  // The SDK's greedy text is what curl gets for the same request.
  auto raw = tally_test::curl(server.url() + "/v1/completions", "POST",
                              R"({"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0})");
  EXPECT_EQ(json::parse(raw.body)["choices"][0]["text"], out["completion_text"]);
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

TEST(ServeSdk, ErrorsReachTheSdkAsApiErrors) {
  TALLY_REQUIRE_NODE_SDK();
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const json out = run_script(server, "sdk_errors.mjs");
  EXPECT_EQ(out["model"], "NotFoundError");

  ServeProcess keyed({"--api-key", "sk-right"});
  ASSERT_TRUE(keyed.started());
  const json auth = run_script(keyed, "sdk_errors.mjs", {"TALLY_KEY=sk-wrong", "TALLY_EXPECT_AUTH=1"});
  EXPECT_EQ(auth["auth"], "AuthenticationError");
  run_script(keyed, "sdk_basics.mjs", {"TALLY_KEY=sk-right"});
}

TEST(ServeSdk, HundredConcurrentStreamsEqualTheirSoloRuns) {
  TALLY_REQUIRE_NODE_SDK();
  ServeProcess server({"--max-seqs", "128"});
  ASSERT_TRUE(server.started());
  const json out = run_script(server, "concurrency.mjs", {"TALLY_CLIENTS=100"});
  EXPECT_EQ(out["clients"], 100);
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

TEST(ServeSdk, DisconnectMidStreamFreesTheBlocks) {
  TALLY_REQUIRE_NODE_SDK();
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const json out = run_script(server, "disconnect.mjs");
  ASSERT_TRUE(out.is_object());
  EXPECT_EQ(out["free"], out["total"]);
  EXPECT_GE(out["aborted"].get<double>(), 1);
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

}  // namespace
