// The GGUF parser behind GgufFile::open/parse. Internal to io/ (tests include it for the
// limits below). It reads front to back with a cursor and checks every count, length, offset
// and size against the bytes left BEFORE using it, so no input can make it read out of
// bounds, recurse without bound, or allocate much more than the input's own size.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"

namespace tally::io {

// Limits tally adds to the format (ggml's own reader has the same or stricter ones).
inline constexpr int kGgufMaxArrayDepth = 8;            // an array of arrays of ... (8 levels)
// Metadata array elements in the whole file; the largest real vocabularies hold < 1M
// entries per array. Each element costs sizeof(GgufValue) (64 bytes) once parsed, so this
// caps the parsed metadata at 512 MiB whatever the file claims.
inline constexpr uint64_t kGgufMaxArrayElements = uint64_t{1} << 23;
inline constexpr uint32_t kGgufMaxDims = 4;             // GGML_MAX_DIMS; at least 1 dim
inline constexpr uint64_t kGgufMaxKeyBytes = 65535;     // the GGUF spec's key limit
inline constexpr uint64_t kGgufMaxTensorNameBytes = 63; // GGML_MAX_NAME (64) minus the NUL
inline constexpr uint64_t kGgufDefaultAlignment = 32;

class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, std::string_view name) : bytes_(bytes), name_(name) {}

  // Fills `out` (its bytes_ and name_ are already set). On failure `out` is garbage.
  Status parse(GgufFile& out);

 private:
  // Where the cursor is, for messages: "metadata #3 'key'[17]".
  struct Field {
    std::string_view section = "header";
    int64_t index = -1;
    std::string_view name;
    int depth = 0;
    std::array<uint64_t, kGgufMaxArrayDepth + 1> elem{};
  };

  Status parse_header(GgufFile& out, uint64_t* n_tensors, uint64_t* n_kv);
  Status parse_metadata(GgufFile& out, uint64_t n_kv);
  Status parse_alignment(GgufFile& out, const GgufValue& v, uint64_t value_offset);
  Status parse_tensor_info(GgufFile& out, uint64_t index);
  Status place_tensors(GgufFile& out);

  template <typename T>
  Status read(T* out, std::string_view what);
  template <typename T>
  Status read_number(GgufValue* out, std::string_view what);
  Status read_string(std::string_view* out, std::string_view what);
  Status read_type(GgufType* out, std::string_view what);
  Status read_value(GgufType type, GgufValue* out);
  Status read_array(GgufValue* out);

  void enter(std::string_view section, int64_t index = -1, std::string_view name = {}) {
    field_ = Field();
    field_.section = section;
    field_.index = index;
    field_.name = name;
  }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  std::string describe_field() const;
  Status fail(uint64_t offset, std::string_view what) const;

  std::span<const uint8_t> bytes_;
  std::string_view name_;
  uint64_t pos_ = 0;
  uint64_t array_elements_ = 0;  // metadata array elements read so far (all levels)
  Field field_;
  std::vector<uint64_t> tensor_info_offsets_;  // where each tensor info starts
};

}  // namespace tally::io
