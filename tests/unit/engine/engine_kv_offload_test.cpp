// The KV offload tiers through the whole engine on stories260K: with a pool too small to keep
// the shared prefixes, blocks come back from the host tier (and from the disk tier, also
// after a restart over the same directory) and the output equals the run without any cache
// bit for bit (tokens, text, log-probabilities; greedy and seeded); swap preemption gives
// the same output as recompute preemption.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/engine.h"
#include "engine/engine_offload.h"
#include "engine_test_util.h"
#include "prefix_workload.h"

namespace tally_test {
namespace {

constexpr int64_t kStoriesBlockBytes = 16 * 1280;  // 16 tokens of stories260K's f16 KV

// A pool of `n_blocks`: the workload's three 200-token stems (13 blocks each) do not all fit.
tally::EngineConfig offload_engine_config(int64_t n_blocks, bool cache) {
  tally::EngineConfig c = stories_config();
  c.max_seqs = 8;
  c.kv_cache_memory = n_blocks * kStoriesBlockBytes;
  c.prefix_cache = cache;
  return c;
}

std::string offload_test_dir(const char* name) {
  const std::string dir = temp_dir() + "/engine_kv_offload_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(EngineKvOffload, HostTierHitsEqualNoCacheBitForBit) {
  const PrefixWorkload w = shared_prefix_workload(40, 3);
  auto off = make_engine(offload_engine_config(20, false));
  tally::EngineConfig c = offload_engine_config(20, true);
  c.kv_offload_memory = 200 * kStoriesBlockBytes;
  auto on = make_engine(c);
  ASSERT_TRUE(off && on);
  const auto want = run_requests(*off, w, false);
  const auto got = run_requests(*on, w, false);
  for (size_t i = 0; i < w.requests.size(); ++i) expect_identical(got[i], want[i], i);
  const tally::KvOffloadStats s = on->metrics().kv_offload;
  EXPECT_GT(s.host_stores, 0);
  EXPECT_GT(s.host_hits, 0) << "the pool of 20 blocks cannot keep all three stems";
  EXPECT_EQ(s.host_hit_bytes, s.host_hits * kStoriesBlockBytes);
}

TEST(EngineKvOffload, DiskTierAndARestartEqualNoCacheBitForBit) {
  const PrefixWorkload w = shared_prefix_workload(24, 4);
  const std::string dir = offload_test_dir("restart");
  auto off = make_engine(offload_engine_config(20, false));
  ASSERT_TRUE(off);
  const auto want = run_requests(*off, w, false);
  tally::EngineConfig c = offload_engine_config(20, true);
  c.kv_offload_memory = 4 * kStoriesBlockBytes;  // most blocks go on down to disk
  c.kv_offload_dir = dir;
  c.kv_offload_disk = int64_t{64} << 20;
  {
    auto first = make_engine(c);
    ASSERT_TRUE(first);
    const auto got = run_requests(*first, w, false);
    for (size_t i = 0; i < w.requests.size(); ++i) expect_identical(got[i], want[i], i);
    EXPECT_GT(first->metrics().kv_offload.disk_stores, 0);
    EXPECT_EQ(first->metrics().kv_offload.disk_errors, 0);
  }
  // A restart: a fresh pool and host tier, the same directory and model.
  auto restarted = make_engine(c);
  ASSERT_TRUE(restarted);
  EXPECT_GT(restarted->metrics().kv_offload.disk_blocks, 0);
  const auto again = run_requests(*restarted, w, false);
  for (size_t i = 0; i < w.requests.size(); ++i) expect_identical(again[i], want[i], i);
  EXPECT_GT(restarted->metrics().kv_offload.disk_hits, 0);
  EXPECT_GT(cached_tokens_of(again[0]), 0) << "the first request after the restart hits disk";
}

TEST(EngineKvOffload, SwapPreemptionEqualsRecomputeBitForBit) {
  const PrefixWorkload w = shared_prefix_workload(48, 5);
  // 20 blocks for 8 sequences of up to 15 blocks: preemptions are certain.
  auto recompute = make_engine(offload_engine_config(20, false));
  tally::EngineConfig c = offload_engine_config(20, true);
  c.kv_offload_memory = 400 * kStoriesBlockBytes;
  c.swap_preemption = true;
  auto swap = make_engine(c);
  ASSERT_TRUE(recompute && swap);
  const auto want = run_requests(*recompute, w, true);
  const auto got = run_requests(*swap, w, true);
  for (size_t i = 0; i < w.requests.size(); ++i) expect_identical(got[i], want[i], i);
  const tally::EngineMetrics m = swap->metrics();
  EXPECT_GT(m.num_preemptions_total, 0);
  EXPECT_GT(m.kv_offload.host_stores, 0);
}

TEST(EngineKvOffload, FingerprintIsTheModelFileAndTheKvShape) {
  // Hashed through a map, the fingerprint is what hashing the file's bytes, its size and the
  // KV layout gives (the disk tier's directory name: a file that differs by one byte, or
  // another KV type or shape, never reads these blocks).
  const std::string path = stories_config().model_path;
  tally::KvStorageShape shape;
  shape.n_layers = 5;
  shape.n_kv_heads = 4;
  shape.head_dim = 8;
  shape.block_size = 16;
  shape.types = tally::DType::kF16;
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, bytes.data(), bytes.size());
  const int64_t layout[] = {static_cast<int64_t>(bytes.size()), 5, 4, 8, 16,
                            static_cast<int64_t>(tally::DType::kF16),
                            static_cast<int64_t>(tally::DType::kF16),
                            4 * 8 * 2, 4 * 8 * 2};  // the slot bytes of K and V
  XXH3_128bits_update(st, layout, sizeof layout);
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  auto got = tally::kv_offload_fingerprint(path, shape);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, (tally::PrefixKey{h.low64, h.high64}));
  shape.types = tally::DType::kQ8_0;
  got = tally::kv_offload_fingerprint(path, shape);
  ASSERT_TRUE(got.ok());
  EXPECT_NE(*got, (tally::PrefixKey{h.low64, h.high64}));
  EXPECT_FALSE(tally::kv_offload_fingerprint(path + ".absent", shape).ok());
}

TEST(EngineKvOffload, BadOffloadSettingsAreRefused) {
  tally::EngineConfig c = offload_engine_config(20, false);
  c.kv_offload_memory = 1 << 20;  // tiers without the prefix cache
  EXPECT_FALSE(tally::Engine::create(c).ok());
  c = offload_engine_config(20, true);
  c.swap_preemption = true;  // swap without a host tier
  EXPECT_FALSE(tally::Engine::create(c).ok());
  c = offload_engine_config(20, true);
  c.kv_offload_dir = offload_test_dir("nosize");  // a directory without a size
  EXPECT_FALSE(tally::Engine::create(c).ok());
}

}  // namespace
}  // namespace tally_test
