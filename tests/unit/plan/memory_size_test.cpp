#include "plan/memory_size.h"

#include <gtest/gtest.h>

namespace tally::plan {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

int64_t parsed(std::string_view text) {
  auto r = parse_memory_size(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().to_string();
  return r.ok() ? *r : -1;
}

TEST(MemorySize, BinaryAndDecimalUnitsAreDistinct) {
  EXPECT_EQ(parsed("80GiB"), 80 * kGiB);
  EXPECT_EQ(parsed("24GB"), int64_t{24'000'000'000});
  EXPECT_EQ(parsed("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parsed("512MB"), int64_t{512'000'000});
  EXPECT_EQ(parsed("4KiB"), 4096);
  EXPECT_EQ(parsed("4kb"), 4000);
  EXPECT_EQ(parsed("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(parsed("1TB"), int64_t{1'000'000'000'000});
}

TEST(MemorySize, PlainBytesSpacesCaseAndFractions) {
  EXPECT_EQ(parsed("1073741824"), kGiB);
  EXPECT_EQ(parsed("100B"), 100);
  EXPECT_EQ(parsed("  16 gib "), 16 * kGiB);
  EXPECT_EQ(parsed("1.5GiB"), kGiB + kGiB / 2);
  EXPECT_EQ(parsed("0.5KiB"), 512);
  EXPECT_EQ(parsed("0"), 0);
}

TEST(MemorySize, ErrorsSayWhatIsWrong) {
  for (const char* bad : {"", "GiB", "-1GiB", "80XB", "1.2.3GiB", "abc"}) {
    auto r = parse_memory_size(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().message();
  }
  auto ambiguous = parse_memory_size("80G");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(ambiguous.status().message().find("GiB"), std::string::npos);
  auto unknown = parse_memory_size("80XB");
  EXPECT_NE(unknown.status().message().find("unknown unit 'xb'"), std::string::npos);
  auto huge = parse_memory_size("99999999999TiB");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos);
  EXPECT_FALSE(parse_memory_size("99999999999999999999").ok());
  EXPECT_FALSE(parse_memory_size("1e30GiB").ok());
}

TEST(MemorySize, FormatsInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(524288), "512.00 KiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 19), "1.50 MiB");
  EXPECT_EQ(format_bytes(80 * kGiB), "80.00 GiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 40), "3.00 TiB");
  EXPECT_EQ(format_bytes(-2048), "-2.00 KiB");
}

}  // namespace
}  // namespace tally::plan
