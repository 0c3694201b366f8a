// The process's memory from /proc and the ledger's parts, as /metrics shows them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exposition_reader.h"
#include "metrics/process_memory.h"
#include "metrics/server_metrics.h"

namespace tally::metrics {
namespace {

constexpr const char* kStatus =
    "Name:\ttally\nVmPeak:\t  204800 kB\nVmSize:\t  102400 kB\nVmHWM:\t    4096 kB\n"
    "VmRSS:\t    3072 kB\nRssAnon:\t    2048 kB\nRssFile:\t     1000 kB\n"
    "RssShmem:\t      24 kB\nThreads:\t1\n";

TEST(ProcessMemory, ParsesTheStatusFieldsInBytes) {
  auto m = parse_process_status(kStatus);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->peak_virtual_bytes, 204800 * 1024);
  EXPECT_EQ(m->virtual_bytes, 102400 * 1024);
  EXPECT_EQ(m->peak_resident_bytes, 4096 * 1024);
  EXPECT_EQ(m->resident_bytes, 3072 * 1024);
  EXPECT_EQ(m->resident_anon_bytes, 2048 * 1024);
  EXPECT_EQ(m->resident_file_bytes, 1000 * 1024);
  EXPECT_EQ(m->resident_shmem_bytes, 24 * 1024);
}

TEST(ProcessMemory, AMissingOrMalformedFieldIsAnError) {
  std::string text = kStatus;
  text.replace(text.find("RssFile"), 7, "RssFool");
  auto missing = parse_process_status(text);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("RssFile"), std::string::npos);
  EXPECT_FALSE(parse_process_status("VmRSS:\t12 MB\n").ok());
  EXPECT_FALSE(parse_process_status("").ok());
}

TEST(ProcessMemory, ReadsThisProcess) {
  auto m = read_process_memory();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_GT(m->resident_bytes, 0);
  EXPECT_GE(m->peak_resident_bytes, m->resident_bytes);
  EXPECT_EQ(m->resident_bytes,
            m->resident_anon_bytes + m->resident_file_bytes + m->resident_shmem_bytes);
  EXPECT_FALSE(read_process_memory(-5).ok());
}

double value_of(const tally_test::Exposition& e, const std::string& name,
                const std::vector<std::pair<std::string, std::string>>& labels = {}) {
  for (const auto& s : e.named(name))
    if (s.labels == labels) return std::stod(s.value);
  ADD_FAILURE() << "no sample " << name;
  return -1;
}

TEST(MemoryMetrics, LedgerPartsAndProcessMemoryAreExposed) {
  ServerMetricsOptions o;
  o.model_name = "m";
  ServerMetrics metrics(o);
  MemoryLedger l;
  l.weight_bytes_mapped = 1000;
  l.weight_bytes_owned = 2000;
  l.activation_bytes = 300;
  l.kv_bytes = 40000;
  l.kv_bytes_per_token = 340;
  l.kv_type = {tally::DType::kQ8_0, tally::DType::kF16};
  l.other_bytes = 5;
  metrics.set_memory_ledger(l);
  const std::string text = metrics.render();
  const tally_test::Exposition parsed = tally_test::read_exposition(text);
  ASSERT_EQ(parsed.error, "") << text;
  EXPECT_EQ(parsed.types.at("process_resident_memory_bytes"), "gauge");
  const tally_test::Exposition* e = &parsed;
  EXPECT_EQ(value_of(*e, "tally:memory_ledger_bytes", {{"part", "weights_mapped"}}), 1000);
  EXPECT_EQ(value_of(*e, "tally:memory_ledger_bytes", {{"part", "weights_owned"}}), 2000);
  EXPECT_EQ(value_of(*e, "tally:memory_ledger_bytes", {{"part", "buffers"}}), 300);
  EXPECT_EQ(value_of(*e, "tally:memory_ledger_bytes", {{"part", "kv_cache"}}), 40000);
  EXPECT_EQ(value_of(*e, "tally:memory_ledger_bytes", {{"part", "other"}}), 5);
  EXPECT_EQ(value_of(*e, "tally:kv_cache_token_bytes", {{"k_type", "q8_0"}, {"v_type", "f16"}}), 340);
  // The process's own figures, unprefixed as Prometheus clients name them, read this scrape.
  const double rss = value_of(*e, "process_resident_memory_bytes");
  EXPECT_GT(rss, 0);
  EXPECT_GT(value_of(*e, "process_virtual_memory_bytes"), rss);
  EXPECT_GE(value_of(*e, "tally:process_resident_memory_peak_bytes"), rss);
  EXPECT_GT(value_of(*e, "tally:process_virtual_memory_peak_bytes"), 0);
  EXPECT_EQ(value_of(*e, "tally:process_resident_memory_kind_bytes", {{"kind", "anon"}}) +
                value_of(*e, "tally:process_resident_memory_kind_bytes", {{"kind", "file"}}) +
                value_of(*e, "tally:process_resident_memory_kind_bytes", {{"kind", "shmem"}}),
            rss);
}

}  // namespace
}  // namespace tally::metrics
