// The KV offload tiers through `tally serve`: a pool too small to keep a prompt's blocks sends
// them to the disk tier; a server restarted with the same --kv-offload-dir and model serves the
// prompt from those files (cached_tokens, the per-tier /metrics, the same text).
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "prefix_requests.h"
#include "serve_process.h"
#include "support/test_data.h"

namespace {

using tally_test::cached_of;
using tally_test::complete;
using tally_test::json;
using tally_test::long_prompt;
using tally_test::metric;
using tally_test::ServeProcess;

// 8 blocks of 16 tokens (stories260K: 640 bytes a token in serve's default KV type), no host
// tier: every block the pool evicts is written to disk.
std::vector<std::string> disk_tier_args(const std::string& dir) {
  return {"--kv-cache-memory", "80KiB", "--max-model-len", "128",  "--kv-offload-dir",
          dir,                 "--kv-offload-disk", "16MiB"};
}

// Other prompts whose blocks take the whole pool, evicting the long prompt's.
void evict_with_other_prompts(const std::string& url) {
  for (const char* start : {"Tom had a dog. ", "The sun was hot. ", "A bird sang. "}) {
    complete(url, std::string(start) + "It liked to run and jump and play all day with a ball "
                                       "in the big green park near the old tree.");
  }
}

TEST(ServeKvOffload, ARestartReusesTheDiskTier) {
  const std::string dir = tally_test::temp_dir() + "/serve_kv_offload";
  std::filesystem::remove_all(dir);
  std::string text;
  {
    ServeProcess server(disk_tier_args(dir));
    ASSERT_TRUE(server.started()) << server.stderr_text();
    const json first = complete(server.url(), long_prompt());
    text = first["choices"][0]["text"].get<std::string>();
    evict_with_other_prompts(server.url());
    EXPECT_GT(metric(server.url(), "tally:kv_offload_stores_total", "tier=\"disk\""), 0);
    EXPECT_EQ(metric(server.url(), "tally:kv_offload_disk_errors_total"), 0);
    EXPECT_EQ(server.stop(SIGTERM), 0);
  }
  ServeProcess restarted(disk_tier_args(dir));
  ASSERT_TRUE(restarted.started()) << restarted.stderr_text();
  EXPECT_GT(metric(restarted.url(), "tally:kv_offload_blocks", "tier=\"disk\""), 0);
  const json again = complete(restarted.url(), long_prompt());
  EXPECT_GT(cached_of(again), 0) << again.dump();
  EXPECT_EQ(again["choices"][0]["text"].get<std::string>(), text);
  EXPECT_GT(metric(restarted.url(), "tally:kv_offload_hits_total", "tier=\"disk\""), 0);
  EXPECT_EQ(restarted.stop(SIGTERM), 0);
}

}  // namespace
