// HugePageBuffer: zeroed, aligned (2 MiB from 2 MiB up, a page below), movable, counted.
#include "base/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

namespace tally {
namespace {

bool all_zero(const HugePageBuffer& b) {
  for (size_t i = 0; i < b.size(); ++i)
    if (b.data()[i] != std::byte{0}) return false;
  return true;
}

TEST(HugePageBuffer, SmallBuffersAreZeroedAndPageAligned) {
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{4096}, size_t{100000}}) {
    HugePageBuffer b(bytes);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 4096, 0u) << bytes;
    EXPECT_TRUE(all_zero(b)) << bytes;
  }
}

TEST(HugePageBuffer, LargeBuffersAreZeroedAndHugePageAligned) {
  const size_t bytes = (size_t{5} << 20) + 123;
  HugePageBuffer b(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  EXPECT_TRUE(all_zero(b));
  b.data()[bytes - 1] = std::byte{7};  // the whole size is writable
  EXPECT_EQ(b.data()[bytes - 1], std::byte{7});
}

TEST(HugePageBuffer, CommittedOnFirstWriteStillReadsAsZeros) {
  HugePageBuffer b((size_t{3} << 20) + 5, HugePageBuffer::Commit::kOnFirstWrite);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  EXPECT_TRUE(all_zero(b));
}

TEST(HugePageBuffer, MovesOwnership) {
  HugePageBuffer a(256);
  a.data()[0] = std::byte{42};
  std::byte* p = a.data();
  HugePageBuffer b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[0], std::byte{42});
  EXPECT_EQ(b.size(), 256u);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  HugePageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HugePageBuffer, AMappingTheKernelRefusesIsAnError) {
  const int64_t before = HugePageBuffer::bytes_in_use();
  // 1 PiB: beyond x86-64's 128 TiB of user address space, refused whatever the overcommit
  // policy.
  Result<HugePageBuffer> r = HugePageBuffer::create(size_t{1} << 50);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(r.status().message().find("1125899906842624 bytes"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(HugePageBuffer::bytes_in_use(), before);
  Result<HugePageBuffer> ok = HugePageBuffer::create(100);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value().size(), 100u);
}

TEST(HugePageBuffer, CountsTheBytesOfLiveBuffers) {
  const int64_t before = HugePageBuffer::bytes_in_use();
  {
    HugePageBuffer big(size_t{3} << 20);
    HugePageBuffer small(100);
    EXPECT_EQ(HugePageBuffer::bytes_in_use() - before, (int64_t{3} << 20) + 4096);
    HugePageBuffer moved = std::move(big);
    EXPECT_EQ(HugePageBuffer::bytes_in_use() - before, (int64_t{3} << 20) + 4096);
    small = std::move(moved);  // frees small's page
    EXPECT_EQ(HugePageBuffer::bytes_in_use() - before, int64_t{3} << 20);
  }
  EXPECT_EQ(HugePageBuffer::bytes_in_use(), before);
}

}  // namespace
}  // namespace tally
