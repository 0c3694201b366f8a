// Large, long-lived buffers that hot loops stream through (repacked weights, the KV cache):
// mapped straight from the kernel, 2 MiB aligned with transparent huge pages asked for, so
// neither the TLB nor the hardware prefetchers stop at every 4 KiB page. Under a VM's nested
// paging a TLB miss costs hundreds of cycles, and decode attention touches a new page every
// few positions of every layer. Huge pages are a hint: where they are off this is plain
// memory. These bytes are not malloc's: bytes_in_use() counts them for the memory ledger's
// checks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace tally {

// Asks for transparent huge pages on the whole 2 MiB pages inside [data, data + bytes): for a
// large buffer allocated by someone else (a library's), before its first touch. A hint, as above.
void advise_huge_pages(void* data, size_t bytes);

class HugePageBuffer {
 public:
  // When the pages are committed: now (touched once, so that reads of never-written bytes cost
  // what reads of real data do, and the memory is taken when the ledger says it is), or by
  // the first write of each page (for a caller that writes every byte at once anyway, such
  // as the repacking threads: no second pass over the memory).
  enum class Commit { kNow, kOnFirstWrite };

  HugePageBuffer() = default;
  // `bytes` zero bytes (at least 1). Buffers of 2 MiB and more start on a 2 MiB boundary,
  // smaller ones on a page. A mapping the kernel refuses is a kOutOfMemory error naming the
  // size (a KV cache sized from user input).
  static Result<HugePageBuffer> create(size_t bytes, Commit commit = Commit::kNow);
  // The same, where running out of memory is fatal (TALLY_CHECK), as for any allocation.
  explicit HugePageBuffer(size_t bytes, Commit commit = Commit::kNow);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;  // megabytes: copying is never intended
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

  // Bytes mapped by all live buffers of the process (whole pages).
  static int64_t bytes_in_use();

 private:
  HugePageBuffer(std::byte* data, size_t size, size_t mapped);
  void release();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // size_ rounded up to whole pages
};

}  // namespace tally
