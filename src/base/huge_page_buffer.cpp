#include "base/huge_page_buffer.h"

#include "base/huge_page_allocator.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace tally {

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kHugePage = size_t{2} << 20;
std::atomic<int64_t> g_bytes_in_use{0};

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void advise_huge_pages(void* data, size_t bytes) {
  const uintptr_t begin = round_up(reinterpret_cast<uintptr_t>(data), kHugePage);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / kHugePage * kHugePage;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void* huge_page_map(size_t bytes) {
  const size_t mapped = round_up(bytes > 0 ? bytes : 1, kPage);
  const size_t align = mapped >= kHugePage ? kHugePage : kPage;
  // Map the alignment's worth more, then give back the unaligned head and the tail.
  const size_t span = mapped + align - kPage;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = round_up(begin, align);
  if (aligned > begin) munmap(p, aligned - begin);
  const size_t tail = span - (aligned - begin) - mapped;
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + mapped), tail);
  // Before the first touch, so the pages are faulted in as huge ones.
  if (align == kHugePage) advise_huge_pages(reinterpret_cast<void*>(aligned), mapped);
  g_bytes_in_use.fetch_add(static_cast<int64_t>(mapped), std::memory_order_relaxed);
  return reinterpret_cast<void*>(aligned);
}

void huge_page_unmap(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t mapped = round_up(bytes > 0 ? bytes : 1, kPage);
  munmap(p, mapped);
  g_bytes_in_use.fetch_sub(static_cast<int64_t>(mapped), std::memory_order_relaxed);
}

Result<HugePageBuffer> HugePageBuffer::create(size_t bytes, Commit commit) {
  auto* data = static_cast<std::byte*>(huge_page_map(bytes));
  if (data == nullptr)
    return make_error(ErrorCode::kOutOfMemory, "cannot map {} bytes: {}", bytes,
                      std::strerror(errno));
  const size_t mapped = round_up(bytes > 0 ? bytes : 1, kPage);
  // The mapping reads as zeros already: the memset only commits it.
  if (commit == Commit::kNow) std::memset(data, 0, mapped);
  return HugePageBuffer(data, bytes, mapped);
}

HugePageBuffer::HugePageBuffer(std::byte* data, size_t size, size_t mapped)
    : data_(data), size_(size), mapped_(mapped) {}

HugePageBuffer::HugePageBuffer(size_t bytes, Commit commit) {
  Result<HugePageBuffer> r = create(bytes, commit);
  TALLY_CHECK(r.ok(), "{}", r.status().to_string());
  *this = std::move(r.value());
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void HugePageBuffer::release() {
  if (data_ == nullptr) return;
  huge_page_unmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

int64_t HugePageBuffer::bytes_in_use() { return g_bytes_in_use.load(std::memory_order_relaxed); }

}  // namespace tally
