// A read-only memory map of a whole file. Weights stay in the map where their layout allows,
// so loading a model costs page faults, not copies. Move-only; unmaps on destruction.
// Thread rules: immutable after open() except release_pages(), which may run concurrently with
// readers of other ranges (a reader of the released range only takes page faults).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace tally {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Drops this process's pages of `range` (a span of bytes()) that lie wholly inside it: a
  // range copied elsewhere then costs no resident memory (RssFile) twice. The bytes stay
  // readable (a later read faults them back in from the file); partial pages at either end
  // are kept, as neighbours may still be read in place. Returns the bytes released.
  size_t release_pages(std::span<const uint8_t> range) const;

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tally
