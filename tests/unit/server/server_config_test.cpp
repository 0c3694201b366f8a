// tally serve's own flags: parsed by CLI11 from the one declaration, then checked and completed
// by serve_finalize() with errors that name the flag. The engine's flags it shares with
// `tally bench throughput` are tested in tests/unit/engine/engine_flags_test.cpp.
#include <fstream>

#include <gtest/gtest.h>

#include "server/server_config.h"
#include "support/test_data.h"

namespace {

using tally::server::serve_add_flags;
using tally::server::serve_finalize;
using tally::server::ServeOptions;

// Parses `args` (after "serve") and finalizes; the status of the whole.
tally::Status parse(std::vector<std::string> args, ServeOptions& o) {
  CLI::App app;
  o.server.model_path = tally_test::repo_path("models/stories260K.gguf");
  serve_add_flags(app, o);
  std::vector<const char*> argv = {"serve"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return tally::Status(tally::ErrorCode::kInvalidArgument, e.what());
  }
  return serve_finalize(o);
}

void expect_refused(std::vector<std::string> args, const std::string& needle) {
  ServeOptions o;
  const tally::Status st = parse(args, o);
  EXPECT_FALSE(st.ok()) << args.front();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

TEST(ServeFlags, Defaults) {
  ServeOptions o;
  ASSERT_TRUE(parse({}, o).ok());
  EXPECT_EQ(o.server.host, "127.0.0.1");
  EXPECT_EQ(o.server.port, 8080);
  EXPECT_EQ(o.server.served_model_names, (std::vector<std::string>{"stories260K"}));
  EXPECT_EQ(o.engine.config.model_path, o.server.model_path);
  EXPECT_EQ(o.engine.config.max_waiting, 1024);
  EXPECT_TRUE(o.server.api_keys.empty());
  EXPECT_EQ(o.server.http.max_body_bytes, size_t{4} << 20);
}

TEST(ServeFlags, EveryFlagLandsWhereItBelongs) {
  const std::string keys = tally_test::temp_dir() + "/keys";
  std::ofstream(keys) << "file-key\n";
  ServeOptions o;
  const auto st = parse(
      {"--host", "0.0.0.0", "--port", "9000", "--served-model-name", "a", "--served-model-name",
       "b", "--api-key", "k1", "--api-keys-file", keys, "--open-health", "--open-metrics",
       "--rate-limit-rpm", "60", "--rate-limit-tpm", "1000", "--max-body-bytes", "1000",
       "--max-tokens-limit", "64", "--max-n", "4", "--max-queue", "7", "--drain-timeout", "3",
       "--header-timeout", "1", "--read-timeout", "2", "--idle-timeout", "5", "--write-timeout",
       "6", "--access-log", "off", "--metrics-prefix", "vllm"},
      o);
  ASSERT_TRUE(st.ok()) << st.message();
  const auto& s = o.server;
  EXPECT_EQ(s.host, "0.0.0.0");
  EXPECT_EQ(s.port, 9000);
  EXPECT_EQ(s.served_model_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.api_keys, (std::vector<std::string>{"k1", "file-key"}));
  EXPECT_TRUE(s.open_health && s.open_metrics);
  EXPECT_EQ(s.rate_limits.requests_per_minute, 60);
  EXPECT_EQ(s.rate_limits.tokens_per_minute, 1000);
  EXPECT_EQ(s.http.max_body_bytes, 1000u);
  EXPECT_EQ(s.max_tokens_limit, 64);
  EXPECT_EQ(s.max_n, 4);
  EXPECT_EQ(o.engine.config.max_waiting, 7);
  EXPECT_EQ(s.drain_timeout, 3);
  EXPECT_EQ(s.http.header_timeout, 1);
  EXPECT_EQ(s.http.read_timeout, 2);
  EXPECT_EQ(s.http.idle_timeout, 5);
  EXPECT_EQ(s.http.write_timeout, 6);
  EXPECT_EQ(s.access_log, "off");
  EXPECT_EQ(s.metrics_prefix, "vllm");
}

TEST(ServeFlags, BadValuesNameTheFlag) {
  expect_refused({"-m", "/nonexistent/model.gguf"}, "/nonexistent/model.gguf");
  expect_refused({"--metrics-prefix", "prom"}, "--metrics-prefix");
  expect_refused({"--served-model-name", ""}, "--served-model-name");
  expect_refused({"--api-key", ""}, "--api-key");
  expect_refused({"--api-keys-file", "/nonexistent/keys"}, "/nonexistent/keys");
  expect_refused({"--port", "70000"}, "--port");
  expect_refused({"--rate-limit-rpm", "-1"}, "--rate-limit-rpm");
  expect_refused({"--header-timeout", "0"}, "--header-timeout");
  expect_refused({"--max-queue", "0"}, "--max-queue");
}

// The engine's flags are the command's to add: serve_add_flags() alone leaves them out, so
// `tally serve` cannot declare one twice (CLI11 would refuse the second at start-up).
TEST(ServeFlags, EngineFlagsAreNotTheServers) {
  ServeOptions o;
  const tally::Status st = parse({"--threads", "2"}, o);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--threads"), std::string::npos) << st.message();
}

}  // namespace
