// MappedFile: the bytes of a file, and release_pages() giving back the resident pages of a
// range that was copied elsewhere (the repacked weights), while the bytes stay readable.
#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "support/test_data.h"

namespace tally {
namespace {

constexpr size_t kFileBytes = size_t{32} << 20;

std::string write_pattern_file() {
  const std::string path = tally_test::temp_dir() + "/pattern.bin";
  std::vector<uint8_t> bytes(kFileBytes);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

uint64_t checksum(std::span<const uint8_t> b) {
  uint64_t sum = 0;
  for (size_t i = 0; i < b.size(); ++i) sum = sum * 31 + b[i];
  return sum;
}

// RssFile of /proc/self/status in bytes (the file pages this process has mapped in).
int64_t rss_file_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "RssFile:") {
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
  }
  return -1;
}

TEST(MappedFile, MapsTheWholeFile) {
  auto f = MappedFile::open(write_pattern_file());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->size(), kFileBytes);
  EXPECT_EQ(f->data()[5000], static_cast<uint8_t>(5000 * 7 + 1));
  EXPECT_EQ(MappedFile::open(tally_test::temp_dir() + "/absent").status().code(), ErrorCode::kNotFound);
}

TEST(MappedFile, ReleasedPagesLeaveResidentMemoryAndStayReadable) {
  auto f = MappedFile::open(write_pattern_file());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const uint64_t sum = checksum(f->bytes());  // every page faulted in
  const int64_t before = rss_file_bytes();
  ASSERT_GE(before, static_cast<int64_t>(kFileBytes));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // A range that starts and ends inside pages: only the whole pages within it go.
  const std::span<const uint8_t> range = f->bytes().subspan(100, kFileBytes - 200);
  EXPECT_EQ(f->release_pages(range), kFileBytes - 2 * page);
  const int64_t after = rss_file_bytes();
  EXPECT_LT(after, before - static_cast<int64_t>(kFileBytes) * 9 / 10)
      << "RssFile " << before << " -> " << after;
  EXPECT_EQ(checksum(f->bytes()), sum);  // read back from the file, unchanged
}

TEST(MappedFile, ARangeWithinOnePageReleasesNothing) {
  auto f = MappedFile::open(write_pattern_file());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->release_pages(f->bytes().subspan(10, 1000)), 0u);
  EXPECT_EQ(f->release_pages({}), 0u);
  EXPECT_EQ(f->data()[10], static_cast<uint8_t>(70));
}

}  // namespace
}  // namespace tally
