// safetensors files (Hugging Face's weight format) and the checkpoint directories made of them.
//
// A file is: 8 bytes, the header's length N as a little-endian u64; N bytes of JSON, an object
// mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into
// the data that follows the header), plus an optional "__metadata__" object of strings; then
// the data. The header is never trusted: each of these is one kFormat error naming the file and
// the tensor: a header longer than the file (or than kMaxSafetensorsHeader), JSON that does not
// parse or is not an object, a duplicate name, a missing or mistyped field, an unknown dtype, a
// negative or overflowing shape, offsets out of order or past the data, a byte size that is not
// the shape's, tensors that overlap, and data bytes no tensor covers (the format requires the
// buffer fully indexed, without holes).
//
// Tensors are views into the mapped file, valid while the SafetensorsFile lives.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace tally::io {

// The JSON header's size limit (Hugging Face's reader has the same 100 MB cap).
inline constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

struct SafetensorsTensor {
  std::string name;
  std::string dtype;               // as written: "F32", "BF16", "I64", ...
  std::optional<DType> type;       // F32, F16, BF16 (what tally computes); nullopt for others
  std::vector<int64_t> shape;      // row-major, outermost first (PyTorch order)
  std::span<const uint8_t> bytes;  // into the file

  int64_t n_elements() const;
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // Bytes owned by the caller (tests, fuzzing); they must outlive the file.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, std::string name = "<memory>");

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  const std::string& name() const { return name_; }
  // In header order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Drops the mapped pages of a tensor already copied elsewhere (no-op for borrowed bytes).
  void release(const SafetensorsTensor& t) const;

 private:
  SafetensorsFile() = default;
  std::string name_;
  std::unique_ptr<MappedFile> map_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string_view, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a checkpoint directory: model.safetensors, or the shards that
// model.safetensors.index.json's "weight_map" names (each shard opened once; a tensor the index
// names that its shard lacks, or a name in two shards, is an error).
class SafetensorsCheckpoint {
 public:
  static Result<SafetensorsCheckpoint> open_dir(const std::string& dir);

  const SafetensorsTensor* find(std::string_view name) const;
  const SafetensorsFile& file_of(std::string_view name) const;
  // Every tensor name, sorted.
  std::vector<std::string_view> names() const;
  size_t n_files() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string_view, std::pair<const SafetensorsTensor*, size_t>> index_;
};

}  // namespace tally::io
