// The exposition checked by a real parser: Prometheus's own `promtool check metrics` (Debian
// package prometheus). Missing promtool skips the test, except under CI=true where it fails.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "metrics/server_metrics.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace tally::metrics {
namespace {

bool have_promtool() { return tally_test::run_command("command -v promtool").exit_code == 0; }

// A server's exposition after some traffic, so every histogram has non-trivial buckets.
std::string busy_exposition(const std::string& prefix) {
  ServerMetricsOptions o;
  o.prefix = prefix;
  o.model_name = "models/a \"b\"\\c";
  o.max_model_len = 4096;
  o.version = "0.1.0";
  o.model_info = {{"architecture", "llama"}, {"quantization", "q4_k_m"}};
  ServerMetrics m(o);
  EngineMetrics snap;
  snap.num_requests_running = 2;
  snap.kv_cache_usage = 0.5;
  snap.prompt_tokens_total = 300;
  m.set_engine_snapshot(snap);
  MemoryLedger ledger;
  ledger.weight_bytes_mapped = 1 << 20;
  ledger.weight_bytes_owned = 600 << 20;
  ledger.activation_bytes = 47 << 20;
  ledger.kv_bytes = int64_t{1} << 30;
  ledger.other_bytes = 4096;
  m.set_memory_ledger(ledger);
  for (int i = 0; i < 20; ++i) {
    EngineEvent e;
    e.kind = EngineEventKind::kFinished;
    e.finish = i % 3 == 0 ? FinishReason::kLength : FinishReason::kStop;
    e.prompt_tokens = 10 * i;
    e.completion_tokens = i;
    e.timing = {.queue_seconds = 0.01 * i,
                .prefill_seconds = 0.02 * i,
                .ttft_seconds = 0.03 * i,
                .decode_seconds = 0.5 * i,
                .e2e_seconds = 0.53 * i};
    m.on_finished(e);
    m.observe_inter_token_latency(0.004 * i);
  }
  return m.render();
}

tally_test::CommandResult promtool_check(const std::string& text, const std::string& tag) {
  const std::string path = tally_test::temp_dir() + "/metrics_" + tag + ".prom";
  std::ofstream(path) << text;
  // In braces: run_command puts </dev/null after the line, and the file must win for promtool.
  return tally_test::run_command("{ promtool check metrics < " + tally_test::shell_quote(path) +
                                 "; }");
}

#define REQUIRE_PROMTOOL()                                                                 \
  do {                                                                                     \
    if (!have_promtool()) {                                                                \
      if (tally_test::in_ci()) FAIL() << "CI needs promtool (apt-get install prometheus)"; \
      GTEST_SKIP() << "promtool absent: skipped outside CI";                               \
    }                                                                                      \
  } while (0)

// With a colon-free prefix the exposition is clean: it parses and passes every lint rule.
TEST(Promtool, ExpositionParsesAndLintsClean) {
  REQUIRE_PROMTOOL();
  const tally_test::CommandResult r = promtool_check(busy_exposition("tally_"), "plain");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
}

// "tally:" and "vllm:" parse; promtool's only remark is its lint rule against colons in
// metric names (meant for recording rules), which vLLM's own names break the same way.
TEST(Promtool, ColonPrefixesParseWithOnlyTheColonLint) {
  REQUIRE_PROMTOOL();
  for (const std::string prefix : {"tally:", "vllm:"}) {
    const std::string tag = prefix.substr(0, prefix.size() - 1);
    const tally_test::CommandResult r = promtool_check(busy_exposition(prefix), tag);
    // 3 = lint problems only; 1 would be a parse error.
    std::istringstream lines(r.out + r.err);
    std::string line;
    int problems = 0;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      ++problems;
      EXPECT_TRUE(line.starts_with(prefix)) << line;
      EXPECT_TRUE(line.ends_with("metric names should not contain ':'")) << line;
    }
    // One remark per prefixed metric family with samples: promtool read all 36 of them (the
    // unprefixed process_* families draw none; spec_decode_num_accepted_tokens_per_pos_total
    // has no series while speculation is off; the 7 kv_offload_* families are among them).
    EXPECT_EQ(problems, 36) << prefix;
    EXPECT_EQ(r.exit_code, 3) << prefix;
  }
}

// The check can fail: a broken exposition is refused.
TEST(Promtool, RejectsABrokenExposition) {
  REQUIRE_PROMTOOL();
  std::string text = busy_exposition("tally_");
  text += "tally_broken{model_name=\"unterminated} 1\n";
  EXPECT_EQ(promtool_check(text, "broken").exit_code, 1);
}

}  // namespace
}  // namespace tally::metrics
