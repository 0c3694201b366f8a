// `tally serve` as `top` sees it: after loading and after 16 concurrent requests, its resident
// memory (RssAnon + RssFile, and the peak VmHWM) is within 5% of the ledger's total plus the
// binary, and /metrics shows both sides: tally:memory_ledger_bytes{part} and the process_*
// gauges (docs/memory.md). Skipped under sanitizers (their shadow memory is resident too).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "serve_process.h"
#include "support/memory_footprint.h"
#include "support/test_data.h"

namespace tally_test {
namespace {

// The value of the sample line that starts with `series` ("name{labels} value").
double sample(const std::string& exposition, const std::string& series) {
  const size_t at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no sample " << series;
    return 0;
  }
  return std::stod(exposition.substr(at + series.size() + 2));
}

struct Footprint {
  int64_t ledger = 0;    // the sum of the ledger's parts
  int64_t resident = 0;  // anon + file
  int64_t peak = 0;
};

Footprint scrape(const ServeProcess& server) {
  const CurlReply r = curl(server.url() + "/metrics", "GET");
  EXPECT_EQ(r.status, 200);
  const std::string& m = r.body;
  Footprint f;
  for (const char* part : {"weights_mapped", "weights_owned", "buffers", "kv_cache", "other"}) {
    f.ledger += static_cast<int64_t>(
        sample(m, std::string("tally:memory_ledger_bytes{part=\"") + part + "\"}"));
  }
  const auto kind = [&](const char* k) {
    return static_cast<int64_t>(
        sample(m, std::string("tally:process_resident_memory_kind_bytes{kind=\"") + k + "\"}"));
  };
  f.resident = kind("anon") + kind("file");
  f.peak = static_cast<int64_t>(sample(m, "tally:process_resident_memory_peak_bytes"));
  EXPECT_GE(sample(m, "process_resident_memory_bytes"), static_cast<double>(f.resident));
  EXPECT_GT(sample(m, "process_virtual_memory_bytes"), 0);
  return f;
}

TEST(ServeMemory, ResidentMemoryIsTheLedgerPlusTheBinary) {
  TALLY_SKIP_UNDER_SANITIZERS();
  TALLY_REQUIRE_SHARED(kFootprintVocab, vocab);
  const std::string model = footprint_model(vocab);
  ASSERT_FALSE(model.empty());
  // A KV cache of 512 MiB keeps the runtime outside the ledger (10-17 MiB: tokenizer, thread
  // stacks, allocator arenas, connections) well under 5% (resident_memory_test.cpp).
  ServeProcess server({"-m", model, "--kv-cache-memory", "512MiB", "--max-model-len", "256",
                       "--max-seqs", "16"});
  ASSERT_TRUE(server.started()) << server.stderr_text();
  const int64_t binary = tally_binary_bytes();

  Footprint loaded = scrape(server);
  ASSERT_GT(loaded.ledger, int64_t{64} << 20);
  EXPECT_TRUE(within_five_percent(loaded.resident, loaded.ledger + binary)) << "after loading";
  EXPECT_TRUE(within_five_percent(loaded.peak, loaded.ledger + binary)) << "peak while loading";

  std::vector<std::thread> clients;
  std::vector<int> status(16);
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&, i] {
      const std::string body = R"({"prompt": "Once upon a time )" + std::to_string(i) +
                               R"(", "max_tokens": 48, "ignore_eos": true, "temperature": 0})";
      status[i] = curl(server.url() + "/v1/completions", "POST", body).status;
    });
  }
  for (auto& c : clients) c.join();
  for (int s : status) EXPECT_EQ(s, 200);

  Footprint busy = scrape(server);
  EXPECT_EQ(busy.ledger, loaded.ledger);
  EXPECT_TRUE(within_five_percent(busy.resident, busy.ledger + binary)) << "after the burst";
  EXPECT_TRUE(within_five_percent(busy.peak, busy.ledger + binary)) << "peak over the burst";
}

}  // namespace
}  // namespace tally_test
