// Writes safetensors bytes (the layout safetensors.h reads): tensors in the order added, their
// data packed back to back, the header padded with spaces to a multiple of 8 as Hugging Face's
// writer does. Used by tests to build checkpoint directories, and small enough to hold in memory.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tally::io {

class SafetensorsWriter {
 public:
  // dtype: "F32", "F16", "BF16", ...; shape outermost first. Bytes are copied.
  void add(std::string name, std::string dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes);
  void set_metadata(std::string key, std::string value) { metadata_[std::move(key)] = std::move(value); }

  std::vector<uint8_t> to_bytes() const;
  Status write(const std::string& path) const;

 private:
  struct Entry {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace tally::io
