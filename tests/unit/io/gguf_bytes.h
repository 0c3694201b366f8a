// Hand-assembled GGUF bytes for the io tests: the writer only makes valid files, these
// helpers make any file, valid or not, byte by byte.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"

namespace tally_test {

class GgufBytes {
 public:
  GgufBytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return raw(&v, 1); }
  GgufBytes& u32(uint32_t v) { return raw(&v, 4); }
  GgufBytes& u64(uint64_t v) { return raw(&v, 8); }
  GgufBytes& i32(int32_t v) { return raw(&v, 4); }
  GgufBytes& f32(float v) { return raw(&v, 4); }
  GgufBytes& str(std::string_view s) { return u64(s.size()).raw(s.data(), s.size()); }
  GgufBytes& type(tally::io::GgufType t) { return u32(static_cast<uint32_t>(t)); }
  // "GGUF", version, tensor count, metadata count.
  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  GgufBytes& kv_u32(std::string_view key, uint32_t v) { return str(key).type(tally::io::GgufType::kU32).u32(v); }
  GgufBytes& kv_str(std::string_view key, std::string_view v) {
    return str(key).type(tally::io::GgufType::kString).str(v);
  }
  // Tensor info: name, dims, type, offset.
  GgufBytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t raw_type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(raw_type).u64(offset);
  }
  // Zero bytes up to the next multiple of `align`.
  GgufBytes& pad(size_t align) {
    while (bytes_.size() % align) bytes_.push_back(0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }

  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  std::span<const uint8_t> span() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace tally_test
