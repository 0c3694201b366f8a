// Huge-page mappings for large arrays that are not HugePageBuffers: the mapping under
// HugePageBuffer (defined in huge_page_buffer.cpp, which counts it), and an allocator that puts
// std::vector's of large arrays on it.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace tally {

// The mapping under HugePageBuffer: `bytes` zero bytes, 2 MiB aligned with huge pages asked for
// when 2 MiB or more (else page aligned), counted in HugePageBuffer::bytes_in_use(); nullptr
// when the kernel refuses. Give it back with huge_page_unmap(p, bytes).
void* huge_page_map(size_t bytes);
void huge_page_unmap(void* p, size_t bytes);

// An allocator for std::vector's of large arrays that are filled once and read at random (the
// vocabulary's hash tables): 2 MiB and more are huge_page_map's, so filling one faults a few
// huge pages instead of every 4 KiB page (a fault is microseconds under a VM's nested paging);
// smaller arrays come from operator new.
template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    void* p = huge_page_map(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) {
      std::allocator<T>().deallocate(p, n);
    } else {
      huge_page_unmap(p, bytes);
    }
  }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }

 private:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
};

}  // namespace tally
