// The kv_disk_block fuzzer's seeds do what they are there for (a broken seed would waste the
// fuzzer's time rediscovering the format): whole block files hit and give their payload back,
// the one with a wrong checksum is indexed, then dropped as corrupt on read.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "../../fuzz/kv_disk_block_input.h"
#include "support/test_data.h"

namespace tally {
namespace {

TEST(KvDiskFuzzSeeds, EverySeedReachesTheRead) {
  char templ[] = "/tmp/tally_kv_disk_seeds_XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::map<std::string, fuzz::KvDiskFuzzOutcome> outcome;
  for (const auto& e : std::filesystem::directory_iterator(
           tally_test::repo_path("tests/fuzz/corpus/kv_disk_block"))) {
    const std::string bytes = tally_test::read_file(e.path().string());
    outcome[e.path().filename().string()] = fuzz::kv_disk_fuzz_one(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), dir);
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(outcome.at("first_block"), fuzz::KvDiskFuzzOutcome::kHit);
  EXPECT_EQ(outcome.at("salted_second_block"), fuzz::KvDiskFuzzOutcome::kHit);
  EXPECT_EQ(outcome.at("bad_checksum"), fuzz::KvDiskFuzzOutcome::kIndexedMiss);
}

TEST(KvDiskFuzzSeeds, AFileCutShortIsDeletedAtOpen) {
  char templ[] = "/tmp/tally_kv_disk_seeds_XXXXXX";
  ASSERT_NE(mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::string bytes =
      tally_test::read_file(tally_test::repo_path("tests/fuzz/corpus/kv_disk_block/first_block"));
  bytes.resize(bytes.size() - 1);
  EXPECT_EQ(fuzz::kv_disk_fuzz_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), dir),
            fuzz::KvDiskFuzzOutcome::kRefused);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tally
