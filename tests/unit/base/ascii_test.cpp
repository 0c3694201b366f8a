// ASCII case folding and the shared percentile rule.
#include "base/ascii.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/percentile.h"

namespace tally {
namespace {

TEST(Ascii, LowerFoldsOnlyAToZ) {
  EXPECT_EQ(ascii_lower("Q4_K_M"), "q4_k_m");
  EXPECT_EQ(ascii_lower("GiB"), "gib");
  EXPECT_EQ(ascii_lower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // UTF-8 bytes unchanged
  EXPECT_EQ(ascii_lower("@[`{"), "@[`{");                          // neighbours of A-Z, a-z
}

TEST(Ascii, IEqualsIgnoresCaseNotLength) {
  EXPECT_TRUE(ascii_iequals("TinyLlama-1.1B", "tinyllama-1.1b"));
  EXPECT_FALSE(ascii_iequals("q4_0", "q4_00"));
  EXPECT_FALSE(ascii_iequals("q4_0", "q4-0"));
}

TEST(Percentile, InterpolatesBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 1.0), 5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(std::vector<double>{1, 2, 3, 4}, 0.5), 2.5);
}

}  // namespace
}  // namespace tally
