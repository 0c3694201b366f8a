// GGUF (v2, v3; little-endian) as llama.cpp writes it: header, metadata key/values, tensor
// infos, aligned data section. GgufFile parses over a memory map (or borrowed bytes) and never
// trusts the file: every count, length, offset and size is checked against the bytes present,
// and a bad file yields a Status naming the field and its byte offset.
//
// Strings and tensor data are views into the mapped bytes: valid while the GgufFile lives.
// Limits tally adds to the format (array nesting depth, total metadata array elements, 1..4
// dims, tensor names of at most 63 bytes, general.alignment a u32 power of two): see
// io/gguf_parser.h. Tensors may not overlap; bytes after the last tensor are ignored.
#pragma once

#include <cstdint>
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

enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
std::string_view gguf_type_name(GgufType type);

// One metadata value. Scalars keep their exact type; arrays keep their element type and
// their elements (arrays of arrays are allowed by the format and supported). An array read
// from a file whose elements are scalars or strings stays in the file's bytes ("packed"):
// a 150k-token vocabulary costs 4 bytes a string here instead of a GgufValue each (~80 B),
// so the model's metadata does not outweigh its tokenizer. Read elements with array_size()
// and item(i), which serve both forms.
struct GgufValue {
  GgufType type = GgufType::kU8;
  union {
    uint64_t u64;  // kU8, kU16, kU32, kU64, kBool
    int64_t i64;   // kI8, kI16, kI32, kI64
    double f64;    // kF32, kF64
  } num{};
  std::string_view str;             // kString
  GgufType elem_type = GgufType::kU8;  // kArray
  std::vector<GgufValue> items;     // kArray built in memory, or an array of arrays
  // kArray parsed from a file, elements not arrays: packed_n elements from packed (in the
  // file's bytes, validated by the parser); strings also keep each element's offset from packed.
  const uint8_t* packed = nullptr;
  uint64_t packed_n = 0;
  std::vector<uint32_t> packed_offsets;

  // Elements of an array, either form.
  size_t array_size() const { return packed ? static_cast<size_t>(packed_n) : items.size(); }
  GgufValue item(size_t i) const;
  bool is_integer() const;  // any integer type (not bool)
  bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
  // Value as a signed integer if it is an integer type that fits int64 (or a bool).
  std::optional<int64_t> as_int() const;
  // Value as a double if numeric (integers are converted).
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  std::optional<std::string_view> as_string() const;
  // Human-readable form for `tally info` (long arrays are abbreviated).
  std::string to_display_string(size_t max_items = 8) const;
};

struct GgufTensorInfo {
  std::string_view name;
  uint32_t raw_type = 0;          // as stored; may be a type tally cannot compute
  DType type = DType::kF32;       // valid when dtype_traits(raw_type) exists (checked on parse)
  std::vector<int64_t> dims;      // ggml order: dims[0] is the contiguous (row) length
  uint64_t offset = 0;            // relative to the data section
  uint64_t n_bytes = 0;           // checked against the file
  const uint8_t* data = nullptr;  // into the mapped file

  int64_t n_elements() const;
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(n_bytes)}; }
};

class GgufFile {
 public:
  // Maps and parses a file.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller (tests, fuzzing); they must outlive the GgufFile.
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::string name = "<memory>");
  // Parses bytes the GgufFile then owns (a model built in memory, e.g. from a Hugging Face
  // directory).
  static Result<GgufFile> parse_owned(std::vector<uint8_t> bytes, std::string name);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return bytes_.size(); }
  // Start of the data section: the end of the tensor infos rounded up to alignment(). With no
  // tensors the file may end before it (vocab-only files do).
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string_view, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: NotFound if absent, Format if the value has the wrong type.
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  // Array getters (elements converted where the conversion is exact).
  Result<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  // Defaults when absent (still an error if present with the wrong type).
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Drops the process's mapped pages of a tensor whose bytes were copied elsewhere (repacked
  // weights), so they are not resident twice; the bytes stay readable. A no-op (0) for
  // borrowed bytes. Returns the bytes released (whole pages inside the tensor).
  size_t release_tensor_pages(const GgufTensorInfo& tensor) const;

  // A tensor whose bytes live outside this file's: a Hugging Face checkpoint's tensor bound in
  // place in its mapped safetensors file (model/hf_checkpoint.h).
  struct ExternalTensor {
    std::string_view name;
    DType type = DType::kF32;
    std::vector<int64_t> dims;  // ggml order
    std::span<const uint8_t> bytes;
  };
  // Adds such tensors after the file's own; `owner` keeps their bytes and names alive as long
  // as this file. kFormat for a name already present or a size that is not the dims'.
  Status add_external_tensors(std::vector<ExternalTensor> tensors, std::shared_ptr<const void> owner);
  // Whether the tensor's bytes are a copy this file owns (parse_owned's buffer) rather than a
  // view of a mapped or borrowed file: the memory ledger counts those as owned.
  bool owns_bytes_of(const GgufTensorInfo& tensor) const;

 private:
  GgufFile() = default;
  friend class GgufParser;

  std::string name_;
  std::unique_ptr<MappedFile> map_;  // null when parsing borrowed bytes
  std::shared_ptr<const std::vector<uint8_t>> owned_;  // parse_owned's bytes
  std::vector<std::shared_ptr<const void>> external_owners_;  // add_external_tensors'
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
  // Name -> index into kv_ / tensors_ (names are unique: the parser rejects duplicates).
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace tally::io
