// The fuzzers' seed corpora are valid inputs (a broken seed would waste the fuzzer's time
// rediscovering the format).
#include <filesystem>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

TEST(FuzzSeeds, EveryGgufSeedParses) {
  const std::string dir = tally_test::repo_path("tests/fuzz/corpus/gguf");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto f = GgufFile::open(entry.path().string());
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    ++n;
  }
  EXPECT_GE(n, 4);
}

}  // namespace
}  // namespace tally::io
