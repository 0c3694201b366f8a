// The offload tiers below the pool with a toy KV store (no model): blocks the pool evicts are
// spilled and reloaded with their exact bytes, the host tier stays within its bound (LRU),
// disk blocks that are corrupt, truncated, deleted or unwritable are misses (counted), a new
// tier over the same directory and fingerprint reuses the blocks, salts never cross, the
// recompute-or-load estimate, and swap copies of blocks still in the pool.
#include "kv/kv_offload.h"

#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kv/kv_cache_manager.h"
#include "support/test_data.h"

namespace tally {
namespace {

constexpr int32_t kOffBs = 4;
constexpr int64_t kOffBlockBytes = 64;

// A pool's KV as plain bytes: [n_blocks][kOffBlockBytes].
class ToyBlockIo final : public KvBlockIo {
 public:
  explicit ToyBlockIo(int32_t n_blocks) : bytes_(static_cast<size_t>(n_blocks) * kOffBlockBytes) {}
  int64_t block_bytes() const override { return kOffBlockBytes; }
  void save_block(BlockId b, std::span<std::byte> out) const override {
    std::copy_n(at(b), kOffBlockBytes, out.data());
  }
  void load_block(BlockId b, std::span<const std::byte> in) override {
    std::copy_n(in.data(), kOffBlockBytes, at(b));
  }
  // What a forward pass would write for logical block `i` of `tokens`: a function of every
  // token up to the block's end (KV depends on the whole prefix).
  static std::vector<std::byte> expected(std::span<const int32_t> tokens, int32_t i) {
    const uint64_t h = XXH3_64bits(tokens.data(), static_cast<size_t>((i + 1) * kOffBs) * 4);
    std::vector<std::byte> v(kOffBlockBytes);
    for (int64_t k = 0; k < kOffBlockBytes; ++k) v[k] = static_cast<std::byte>((h >> (k % 56)) + k);
    return v;
  }
  void write(BlockId b, const std::vector<std::byte>& v) { std::copy(v.begin(), v.end(), at(b)); }
  std::vector<std::byte> read(BlockId b) const { return {at(b), at(b) + kOffBlockBytes}; }

 private:
  std::byte* at(BlockId b) { return bytes_.data() + static_cast<size_t>(b) * kOffBlockBytes; }
  const std::byte* at(BlockId b) const {
    return bytes_.data() + static_cast<size_t>(b) * kOffBlockBytes;
  }
  std::vector<std::byte> bytes_;
};

struct OffloadRig {
  ToyBlockIo io;
  std::unique_ptr<KvOffload> offload;
  KvCacheManager kv;

  OffloadRig(int32_t n_blocks, int64_t host_blocks, const std::string& dir = {},
             int64_t disk_blocks = 0, PrefixKey fingerprint = {1, 2})
      : io(n_blocks), kv(KvCacheConfig{n_blocks, kOffBs, 0.0, true}) {
    KvOffloadConfig c;
    c.host_bytes = host_blocks * KvOffload::host_entry_bytes(kOffBlockBytes, kOffBs);
    c.disk_dir = dir;
    // Files of blocks up to a second block (their files hold their whole prefix).
    c.disk_bytes = disk_blocks * KvDiskTier::file_bytes(2 * kOffBs, kOffBlockBytes, 0);
    c.fingerprint = fingerprint;
    c.block_size = kOffBs;
    auto made = KvOffload::create(c, io);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    offload = std::move(*made);
    kv.set_offload(offload.get());
  }

  // A sequence computes all of `tokens` (its blocks get their expected bytes), is indexed,
  // and ends.
  void run(SeqId seq, const std::vector<int32_t>& tokens, std::string_view salt = {}) {
    std::vector<BlockCopy> copies;
    ASSERT_TRUE(kv.append(seq, static_cast<int32_t>(tokens.size()), copies).ok());
    const auto table = kv.block_table(seq);
    for (int32_t i = 0; i < static_cast<int32_t>(tokens.size()) / kOffBs; ++i) {
      io.write(table[i], ToyBlockIo::expected(tokens, i));
    }
    kv.cache_full_blocks(seq, tokens, salt);
    kv.free(seq);
  }

  // Adopts the cached prefix of `tokens` into `seq`; checks every adopted block holds the
  // bytes computing it would give. Returns the tokens adopted.
  int32_t adopt(SeqId seq, const std::vector<int32_t>& tokens, std::string_view salt = {}) {
    PrefixMatch m;
    kv.match_prefix(tokens, salt, 1 << 20, m);
    const int32_t got = kv.adopt_prefix(seq, m, tokens, salt);
    const auto table = kv.block_table(seq);
    for (int32_t i = 0; i < got / kOffBs; ++i) {
      EXPECT_EQ(io.read(table[i]), ToyBlockIo::expected(tokens, i)) << "block " << i;
    }
    const Status inv = kv.check_invariants();
    EXPECT_TRUE(inv.ok()) << inv.to_string();
    return got;
  }
};

std::vector<int32_t> offload_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

TEST(KvOffload, EvictedBlocksSpillToHostAndComeBackExactly) {
  OffloadRig rig(4, 8);
  const auto a = offload_tokens(100, 12);  // 3 full blocks
  rig.run(1, a);
  rig.run(2, offload_tokens(500, 16));  // takes all 4 blocks: a's 3 are evicted, spilled
  EXPECT_EQ(rig.offload->stats().host_stores, 3);
  PrefixMatch m;
  rig.kv.match_prefix(a, "", 1 << 20, m);
  EXPECT_TRUE(m.blocks.empty());  // not in the pool any more
  EXPECT_EQ(m.tier_keys.size(), 3u);
  EXPECT_EQ(m.n_evictable, 3);
  EXPECT_EQ(rig.adopt(3, a), 12);
  EXPECT_EQ(rig.offload->stats().host_hits, 3);
  EXPECT_EQ(rig.offload->stats().host_hit_bytes, 3 * kOffBlockBytes);
  // Reloaded blocks are indexed again: a new request hits them in the pool.
  rig.kv.free(3);
  rig.kv.match_prefix(a, "", 1 << 20, m);
  EXPECT_EQ(m.blocks.size(), 3u);
  EXPECT_TRUE(m.tier_keys.empty());
}

TEST(KvOffload, PoolHeadThenTierTail) {
  OffloadRig rig(4, 8);
  const auto a = offload_tokens(100, 16);
  rig.run(1, a);                         // a's tail is freed (and so evicted) first
  rig.run(2, offload_tokens(900, 8));    // evicts a's last 2 blocks
  PrefixMatch m;
  rig.kv.match_prefix(a, "", 1 << 20, m);
  EXPECT_EQ(m.blocks.size(), 2u);
  EXPECT_EQ(m.tier_keys.size(), 2u);
  EXPECT_EQ(rig.adopt(3, a), 16);
}

TEST(KvOffload, HostTierKeepsItsBoundLeastRecentlyUsedOut) {
  OffloadRig rig(1, 2);  // one-block prompts: each costs one host entry exactly
  const auto a = offload_tokens(100, 4);
  const auto b = offload_tokens(200, 4);
  const auto c = offload_tokens(300, 4);
  rig.run(1, a);
  rig.run(2, b);  // a spills
  rig.run(3, c);  // b spills
  rig.run(4, offload_tokens(400, 4));  // c spills, pushing a out (no disk: dropped)
  const KvOffloadStats s = rig.offload->stats();
  EXPECT_EQ(s.host_blocks, 2);
  EXPECT_EQ(s.host_stores, 3);
  EXPECT_EQ(s.host_bytes, 2 * KvOffload::host_entry_bytes(kOffBlockBytes, kOffBs));
  EXPECT_EQ(rig.adopt(5, a), 0);  // gone
  rig.kv.free(5);
  EXPECT_EQ(rig.adopt(6, b), 4);
}

TEST(KvOffload, ADeepBlockCostsItsPrefixInTheHostTier) {
  // A block keeps every token id before it too: the bound is in bytes, as the ledger counts.
  OffloadRig rig(2, 2);
  rig.run(1, offload_tokens(100, 8));
  rig.run(2, offload_tokens(200, 8));  // evicts the first prompt's 2 blocks
  const KvOffloadStats s = rig.offload->stats();
  EXPECT_EQ(s.host_stores, 2);
  EXPECT_EQ(s.host_blocks, 1);  // 80 + 96 bytes do not fit in 2 x 80
  EXPECT_LE(s.host_bytes, 2 * KvOffload::host_entry_bytes(kOffBlockBytes, kOffBs));
}

TEST(KvOffload, SaltsNeverCrossInTheTiers) {
  OffloadRig rig(2, 8);
  const auto a = offload_tokens(100, 8);
  rig.run(1, a, "alice");
  rig.run(2, offload_tokens(700, 8));
  EXPECT_EQ(rig.adopt(3, a, "bob"), 0);
  rig.kv.free(3);
  EXPECT_EQ(rig.adopt(4, a), 0);
  rig.kv.free(4);
  EXPECT_EQ(rig.adopt(5, a, "alice"), 8);
}

TEST(KvOffload, RecomputeWinsWhenLoadingIsEstimatedSlower) {
  OffloadRig rig(2, 8);
  const auto a = offload_tokens(100, 8);
  rig.run(1, a);
  rig.run(2, offload_tokens(700, 8));
  rig.offload->note_recompute(1000000, 1e-9);  // computing is (absurdly) free
  // No load timed yet: loading is the bet.
  PrefixMatch m;
  rig.kv.match_prefix(a, "", 1 << 20, m);
  EXPECT_EQ(m.tier_keys.size(), 2u);
  EXPECT_EQ(rig.adopt(3, a), 8);  // times the loads
  rig.kv.free(3);
  rig.run(4, offload_tokens(800, 8));  // a to the host tier again
  rig.kv.match_prefix(a, "", 1 << 20, m);
  EXPECT_TRUE(m.tier_keys.empty());
  EXPECT_EQ(m.n_tier_skipped, 2);
  EXPECT_TRUE(m.has_next);  // the request computes the first tier block itself
  EXPECT_EQ(rig.adopt(5, a), 0);
  EXPECT_EQ(rig.offload->stats().skipped_loads, 2);
}

TEST(KvOffload, SwapCopiesBlocksStillInThePool) {
  OffloadRig rig(4, 8);
  const auto a = offload_tokens(100, 10);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(rig.kv.append(1, 10, copies).ok());
  for (int32_t i = 0; i < 2; ++i) rig.io.write(rig.kv.block_table(1)[i], ToyBlockIo::expected(a, i));
  rig.kv.cache_full_blocks(1, a, "");
  rig.kv.offload_sequence(1);
  EXPECT_EQ(rig.offload->stats().host_stores, 2);  // the partial block stays out
  rig.kv.free(1);
  rig.run(2, offload_tokens(600, 16));  // evicts them: already stored, nothing copied
  EXPECT_EQ(rig.offload->stats().host_stores, 2 + 0);
  EXPECT_EQ(rig.adopt(3, a), 8);
}

class KvDiskTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tally_test::temp_dir() + "/kv_offload_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  // Fills a disk-only rig with a's 2 blocks (evicted by b); returns a.
  std::vector<int32_t> spill_to_disk(OffloadRig& rig) {
    auto a = offload_tokens(100, 8);
    rig.run(1, a);
    rig.run(2, offload_tokens(900, 8));
    EXPECT_EQ(rig.offload->stats().disk_stores, 2);
    return a;
  }
  std::vector<std::filesystem::path> block_files() const {
    std::vector<std::filesystem::path> files;
    for (const auto& sub : std::filesystem::directory_iterator(dir_)) {
      for (const auto& f : std::filesystem::directory_iterator(sub.path())) files.push_back(f.path());
    }
    std::sort(files.begin(), files.end());
    return files;
  }
  std::string dir_;
};

TEST_F(KvDiskTierTest, SpillsBelowTheHostTierAndReloads) {
  OffloadRig rig(2, 1, dir_, 8);
  const auto a = offload_tokens(100, 8);
  rig.run(1, a);
  rig.run(2, offload_tokens(900, 8));  // a's 2 blocks: 1 in host, 1 pushed down to disk
  KvOffloadStats s = rig.offload->stats();
  EXPECT_EQ(s.host_blocks, 1);
  EXPECT_EQ(s.disk_blocks, 1);
  EXPECT_EQ(rig.adopt(3, a), 8);
  s = rig.offload->stats();
  EXPECT_EQ(s.host_hits + s.disk_hits, 2);
  EXPECT_EQ(s.disk_hits, 1);
  EXPECT_EQ(s.disk_errors, 0);
}

TEST_F(KvDiskTierTest, ARestartWithTheSameDirAndFingerprintReusesBlocks) {
  std::vector<int32_t> a;
  {
    OffloadRig rig(2, 0, dir_, 8);
    a = spill_to_disk(rig);
  }
  {
    OffloadRig other_model(2, 0, dir_, 8, PrefixKey{7, 7});
    EXPECT_EQ(other_model.offload->stats().disk_blocks, 0);
    EXPECT_EQ(other_model.adopt(1, a), 0);
  }
  OffloadRig restarted(2, 0, dir_, 8);
  EXPECT_EQ(restarted.offload->stats().disk_blocks, 2);
  EXPECT_EQ(restarted.adopt(1, a), 8);
  EXPECT_EQ(restarted.offload->stats().disk_hits, 2);
}

TEST_F(KvDiskTierTest, CorruptTruncatedAndDeletedFilesAreCountedMisses) {
  OffloadRig rig(4, 0, dir_, 16);
  const auto a = offload_tokens(100, 8);
  const auto b = offload_tokens(200, 8);
  const auto c = offload_tokens(300, 8);
  rig.run(1, a);
  rig.run(2, b);
  rig.run(3, c);
  rig.run(4, offload_tokens(900, 16));  // evicts a, b, c: 6 files
  ASSERT_EQ(rig.offload->stats().disk_blocks, 6);
  // Damage the first block of each: one byte flipped, cut short, deleted.
  auto file_of = [&](const std::vector<int32_t>& t) {
    PrefixMatch m;
    rig.kv.match_prefix(t, "", 1 << 20, m);
    EXPECT_EQ(m.tier_keys.size(), 2u);
    return std::filesystem::path(dir_) / kv_key_hex(PrefixKey{1, 2}) /
           (kv_key_hex(m.tier_keys[0]) + ".kvb");
  };
  const auto fa = file_of(a);
  {
    std::fstream f(fa, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(120);
    char ch = 0;
    f.read(&ch, 1);
    f.seekp(120);
    ch = static_cast<char>(ch ^ 0x5a);
    f.write(&ch, 1);
  }
  std::filesystem::resize_file(file_of(b), 100);
  std::filesystem::remove(file_of(c));
  EXPECT_EQ(rig.adopt(5, a), 0);
  EXPECT_EQ(rig.adopt(6, b), 0);
  EXPECT_EQ(rig.adopt(7, c), 0);
  EXPECT_EQ(rig.offload->stats().disk_errors, 3);
  EXPECT_EQ(rig.offload->stats().disk_hits, 0);
}

TEST_F(KvDiskTierTest, TruncatedFilesAreDroppedAtStart) {
  {
    OffloadRig rig(2, 0, dir_, 8);
    spill_to_disk(rig);
  }
  const auto files = block_files();
  ASSERT_EQ(files.size(), 2u);
  std::filesystem::resize_file(files[0], 50);
  OffloadRig restarted(2, 0, dir_, 8);
  const KvOffloadStats s = restarted.offload->stats();
  EXPECT_EQ(s.disk_blocks, 1);
  EXPECT_EQ(s.disk_errors, 1);
  EXPECT_EQ(block_files().size(), 1u);  // deleted
}

TEST_F(KvDiskTierTest, ADirectoryDeletedUnderneathIsAMissNotACrash) {
  OffloadRig rig(2, 0, dir_, 8);
  const auto a = spill_to_disk(rig);
  std::filesystem::remove_all(dir_);
  EXPECT_EQ(rig.adopt(3, a), 0);  // reading: missing
  rig.kv.free(3);
  rig.run(4, offload_tokens(300, 8));  // writing: no directory
  const KvOffloadStats s = rig.offload->stats();
  EXPECT_GE(s.disk_errors, 2);
  EXPECT_EQ(s.disk_hits, 0);
}

TEST_F(KvDiskTierTest, AFullDiskTierDropsItsOldestFiles) {
  OffloadRig rig(2, 0, dir_, 3);
  rig.run(1, offload_tokens(100, 8));
  rig.run(2, offload_tokens(200, 8));
  rig.run(3, offload_tokens(300, 8));
  const KvOffloadStats s = rig.offload->stats();
  EXPECT_EQ(s.disk_blocks, 3);
  EXPECT_EQ(s.disk_stores, 4);
  EXPECT_LE(s.disk_bytes, 3 * KvDiskTier::file_bytes(2 * kOffBs, kOffBlockBytes, 0));
  EXPECT_EQ(block_files().size(), 3u);
  // The oldest file went: a's last block (a sequence's tail is evicted first).
  EXPECT_EQ(rig.adopt(4, offload_tokens(100, 8)), 4);
}

// Every key forced to one constant: the tiers find every block as a candidate for every
// lookup, so only the checks of the whole prefix and the salt keep the KV right. Prompts share
// later blocks under different first blocks (the same block tokens after another parent) and
// come with two salts; a small pool sends blocks down to the tiers all the time. Every adopted
// block must hold the bytes computing it gives (adopt() checks), and hits from the tier(s)
// under test must happen.
void run_colliding_keys_load(OffloadRig& rig, uint32_t seed, int64_t& host_hits,
                             int64_t& disk_hits) {
  rig.kv.force_prefix_key_for_test(PrefixKey{9, 9});
  std::mt19937 rng(seed);
  auto prompt = [&] {
    std::vector<int32_t> t = offload_tokens(1000 + static_cast<int32_t>(rng() % 4) * 10, kOffBs);
    const std::vector<int32_t> body = offload_tokens(50 + static_cast<int32_t>(rng() % 2) * 20,
                                                     2 * kOffBs);
    t.insert(t.end(), body.begin(), body.end());
    t.push_back(7);  // a partial block: every full block can be a hit
    return t;
  };
  SeqId seq = 1;
  for (int step = 0; step < 600 && !::testing::Test::HasFailure(); ++step) {
    const std::vector<int32_t> t = prompt();
    const std::string salt = rng() % 3 == 0 ? "salted" : "";
    if (rng() % 2 == 0) {
      rig.run(seq++, t, salt);
    } else {
      rig.adopt(seq, t, salt);
      rig.kv.free(seq++);
    }
  }
  host_hits = rig.offload->stats().host_hits;
  disk_hits = rig.offload->stats().disk_hits;
}

TEST(KvOffload, CollidingKeysNeverServeAnotherPrefixFromTheHostTier) {
  OffloadRig rig(4, 16);
  int64_t host_hits = 0;
  int64_t disk_hits = 0;
  run_colliding_keys_load(rig, 21, host_hits, disk_hits);
  EXPECT_GT(host_hits, 20);
}

TEST_F(KvDiskTierTest, CollidingKeysNeverServeAnotherPrefixFromTheDiskTier) {
  // Under one key the disk tier holds one file (the last block written): pools of a few sizes,
  // so that it is sometimes a later block whose first block another prompt has in the pool.
  int64_t disk_hits = 0;
  for (int32_t pool = 5; pool <= 7; ++pool) {
    std::filesystem::remove_all(dir_);
    OffloadRig rig(pool, 0, dir_, 16);
    int64_t host = 0;
    int64_t disk = 0;
    run_colliding_keys_load(rig, 22 + pool, host, disk);
    disk_hits += disk;
    EXPECT_EQ(rig.offload->stats().disk_errors, 0) << "another prefix's file is a miss, not damage";
  }
  EXPECT_GT(disk_hits, 0);
}

}  // namespace
}  // namespace tally
