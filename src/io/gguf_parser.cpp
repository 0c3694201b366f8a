#include "io/gguf_parser.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include <fmt/format.h>

namespace tally::io {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kMagic = 0x46554747;           // "GGUF" read as a little-endian u32
constexpr uint32_t kMagicSwapped = 0x47475546;    // the magic of a byte-swapped reader's view
constexpr uint32_t kMaxType = static_cast<uint32_t>(GgufType::kF64);

// Fewest bytes one value of a type can occupy: bounds an array's length by the bytes left.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    case GgufType::kString: return 8;   // the length
    case GgufType::kArray: return 12;   // element type + length
  }
  return 1;
}

// Smallest encodings: key (length + 1 byte) + type + 1-byte value; name (length + 1 byte) +
// n_dims + one dim + type + offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
// Counts are bounded by the bytes left, but a big file could still claim millions of
// entries it does not hold: reserve at most this many up front and grow from there.
constexpr uint64_t kMaxReserve = 4096;

}  // namespace

std::string GgufParser::describe_field() const {
  std::string out(field_.section);
  if (field_.index >= 0) out += fmt::format(" #{}", field_.index);
  if (!field_.name.empty()) {
    // Names come from the file: keep the message printable and short.
    std::string_view n = field_.name.substr(0, 80);
    out += " '";
    for (unsigned char c : n) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    out += field_.name.size() > n.size() ? "...'" : "'";
  }
  for (int d = 0; d < field_.depth; ++d) out += fmt::format("[{}]", field_.elem[d]);
  return out;
}

Status GgufParser::fail(uint64_t offset, std::string_view what) const {
  return make_error(ErrorCode::kFormat, "gguf: {}: {}: {} at offset {}", name_, describe_field(), what,
                    offset);
}

template <typename T>
Status GgufParser::read(T* out, std::string_view what) {
  if (remaining() < sizeof(T)) {
    return fail(pos_, fmt::format("{} ({} bytes) runs past the end of the file ({} bytes)", what,
                                  sizeof(T), bytes_.size()));
  }
  std::memcpy(out, bytes_.data() + pos_, sizeof(T));
  pos_ += sizeof(T);
  return {};
}

template <typename T>
Status GgufParser::read_number(GgufValue* out, std::string_view what) {
  T x{};
  TALLY_RETURN_IF_ERROR(read(&x, what));
  if constexpr (std::is_floating_point_v<T>) {
    out->num.f64 = x;
  } else if constexpr (std::is_signed_v<T>) {
    out->num.i64 = x;
  } else {
    out->num.u64 = x;
  }
  return {};
}

Status GgufParser::read_string(std::string_view* out, std::string_view what) {
  const uint64_t at = pos_;
  uint64_t len = 0;
  if (remaining() < sizeof(len)) {  // checked here so the hot path formats no field name
    return fail(at, fmt::format("{} length (8 bytes) runs past the end of the file ({} bytes)", what, bytes_.size()));
  }
  std::memcpy(&len, bytes_.data() + pos_, sizeof(len));
  pos_ += sizeof(len);
  if (len > remaining()) {
    return fail(at, fmt::format("{} length {} exceeds the {} bytes left", what, len, remaining()));
  }
  *out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return {};
}

Status GgufParser::read_type(GgufType* out, std::string_view what) {
  const uint64_t at = pos_;
  uint32_t raw = 0;
  TALLY_RETURN_IF_ERROR(read(&raw, what));
  if (raw > kMaxType) return fail(at, fmt::format("{} {} is not a GGUF value type (0..{})", what, raw, kMaxType));
  *out = static_cast<GgufType>(raw);
  return {};
}

Status GgufParser::read_value(GgufType type, GgufValue* out) {
  out->type = type;
  switch (type) {
    case GgufType::kU8: return read_number<uint8_t>(out, "u8 value");
    case GgufType::kI8: return read_number<int8_t>(out, "i8 value");
    case GgufType::kU16: return read_number<uint16_t>(out, "u16 value");
    case GgufType::kI16: return read_number<int16_t>(out, "i16 value");
    case GgufType::kU32: return read_number<uint32_t>(out, "u32 value");
    case GgufType::kI32: return read_number<int32_t>(out, "i32 value");
    case GgufType::kU64: return read_number<uint64_t>(out, "u64 value");
    case GgufType::kI64: return read_number<int64_t>(out, "i64 value");
    case GgufType::kF32: return read_number<float>(out, "f32 value");
    case GgufType::kF64: return read_number<double>(out, "f64 value");
    case GgufType::kBool: {
      uint8_t x = 0;
      TALLY_RETURN_IF_ERROR(read(&x, "bool value"));
      if (x > 1) return fail(pos_ - 1, fmt::format("bool value {} is neither 0 nor 1", x));
      out->num.u64 = x;
      return {};
    }
    case GgufType::kString: return read_string(&out->str, "string");
    case GgufType::kArray: return read_array(out);
  }
  return fail(pos_, "unknown value type");  // read_type rejects these first
}

Status GgufParser::read_array(GgufValue* out) {
  if (field_.depth >= kGgufMaxArrayDepth) {
    return fail(pos_, fmt::format("arrays nested deeper than {} levels", kGgufMaxArrayDepth));
  }
  TALLY_RETURN_IF_ERROR(read_type(&out->elem_type, "array element type"));
  const uint64_t at = pos_;
  uint64_t n = 0;
  TALLY_RETURN_IF_ERROR(read(&n, "array length"));
  // Each element needs at least min_value_bytes: this bounds n by the file before reserving.
  const uint64_t min_bytes = min_value_bytes(out->elem_type);
  if (n > remaining() / min_bytes) {
    return fail(at, fmt::format("array length {} of {} needs at least {} bytes per element but only {} bytes are left",
                                n, gguf_type_name(out->elem_type), min_bytes, remaining()));
  }
  if (n > kGgufMaxArrayElements - array_elements_) {
    return fail(at, fmt::format("array length {} exceeds tally's limit of {} metadata array elements per file", n,
                                kGgufMaxArrayElements));
  }
  array_elements_ += n;
  const int level = field_.depth++;
  if (out->elem_type == GgufType::kArray) {
    out->items.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      field_.elem[level] = i;
      TALLY_RETURN_IF_ERROR(read_value(out->elem_type, &out->items[i]));
    }
  } else {
    // Packed (gguf.h): each element is checked as it is read, then left in the file's bytes.
    const uint64_t start = pos_;
    out->packed = bytes_.data() + start;
    out->packed_n = n;
    const bool strings = out->elem_type == GgufType::kString;
    if (strings) out->packed_offsets.resize(n);
    GgufValue element;
    for (uint64_t i = 0; i < n; ++i) {
      field_.elem[level] = i;
      if (strings) {
        if (pos_ - start > UINT32_MAX) return fail(pos_, "array of strings larger than 4 GiB");
        out->packed_offsets[i] = static_cast<uint32_t>(pos_ - start);
      }
      TALLY_RETURN_IF_ERROR(read_value(out->elem_type, &element));
    }
  }
  field_.depth = level;
  return {};
}

Status GgufParser::parse_header(GgufFile& out, uint64_t* n_tensors, uint64_t* n_kv) {
  uint32_t magic = 0;
  TALLY_RETURN_IF_ERROR(read(&magic, "magic"));
  if (magic != kMagic) {
    return fail(0, fmt::format("magic {:#010x} is not \"GGUF\" (not a GGUF file)", magic));
  }
  const uint64_t version_at = pos_;
  uint32_t version = 0;
  TALLY_RETURN_IF_ERROR(read(&version, "version"));
  if (version == 1) {
    return Status(ErrorCode::kUnsupported,
                  fmt::format("gguf: {}: version 1 is not supported (only versions 2 and 3; "
                              "re-convert the file) at offset {}",
                              name_, version_at));
  }
  if (version != 2 && version != 3) {
    const bool swapped = __builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3;
    return Status(ErrorCode::kUnsupported,
                  fmt::format("gguf: {}: {} at offset {}", name_,
                              swapped ? "big-endian GGUF is not supported"
                                      : fmt::format("version {} is not supported (only 2 and 3)", version),
                              version_at));
  }
  out.version_ = version;
  const uint64_t counts_at = pos_;
  TALLY_RETURN_IF_ERROR(read(n_tensors, "tensor count"));
  TALLY_RETURN_IF_ERROR(read(n_kv, "metadata count"));
  if (*n_kv > remaining() / kMinKvBytes) {
    return fail(counts_at + 8, fmt::format("metadata count {} needs at least {} bytes each but only {} bytes are left",
                                           *n_kv, kMinKvBytes, remaining()));
  }
  if (*n_tensors > remaining() / kMinTensorInfoBytes) {
    return fail(counts_at, fmt::format("tensor count {} needs at least {} bytes each but only {} bytes are left",
                                       *n_tensors, kMinTensorInfoBytes, remaining()));
  }
  return {};
}

Status GgufParser::parse_alignment(GgufFile& out, const GgufValue& v, uint64_t value_offset) {
  if (v.type != GgufType::kU32) {
    return fail(value_offset, fmt::format("general.alignment has type {}, expected u32", gguf_type_name(v.type)));
  }
  if (v.num.u64 == 0 || !std::has_single_bit(v.num.u64)) {
    return fail(value_offset, fmt::format("general.alignment {} is not a nonzero power of two", v.num.u64));
  }
  out.alignment_ = v.num.u64;
  return {};
}

Status GgufParser::parse_metadata(GgufFile& out, uint64_t n_kv) {
  out.kv_.reserve(std::min(n_kv, kMaxReserve));
  out.kv_index_.reserve(std::min(n_kv, kMaxReserve));
  for (uint64_t i = 0; i < n_kv; ++i) {
    enter("metadata", static_cast<int64_t>(i));
    const uint64_t key_at = pos_;
    std::string_view key;
    TALLY_RETURN_IF_ERROR(read_string(&key, "key"));
    if (key.empty() || key.size() > kGgufMaxKeyBytes) {
      return fail(key_at, fmt::format("key length {} is outside 1..{}", key.size(), kGgufMaxKeyBytes));
    }
    field_.name = key;
    auto [it, inserted] = out.kv_index_.emplace(key, out.kv_.size());
    if (!inserted) return fail(key_at, fmt::format("duplicate key (first defined by metadata #{})", it->second));
    GgufType type;
    TALLY_RETURN_IF_ERROR(read_type(&type, "value type"));
    const uint64_t value_at = pos_;
    GgufValue value;
    TALLY_RETURN_IF_ERROR(read_value(type, &value));
    if (key == "general.alignment") TALLY_RETURN_IF_ERROR(parse_alignment(out, value, value_at));
    out.kv_.emplace_back(key, std::move(value));
  }
  return {};
}

Status GgufParser::parse_tensor_info(GgufFile& out, uint64_t index) {
  enter("tensor info", static_cast<int64_t>(index));
  tensor_info_offsets_.push_back(pos_);
  GgufTensorInfo t;
  const uint64_t name_at = pos_;
  TALLY_RETURN_IF_ERROR(read_string(&t.name, "name"));
  if (t.name.empty() || t.name.size() > kGgufMaxTensorNameBytes) {
    return fail(name_at, fmt::format("name length {} is outside 1..{}", t.name.size(), kGgufMaxTensorNameBytes));
  }
  field_.name = t.name;
  auto [it, inserted] = out.tensor_index_.emplace(t.name, out.tensors_.size());
  if (!inserted) return fail(name_at, fmt::format("duplicate tensor name (first defined by tensor info #{})", it->second));

  const uint64_t dims_at = pos_;
  uint32_t n_dims = 0;
  TALLY_RETURN_IF_ERROR(read(&n_dims, "dimension count"));
  if (n_dims == 0 || n_dims > kGgufMaxDims) {
    return fail(dims_at, fmt::format("dimension count {} is outside 1..{}", n_dims, kGgufMaxDims));
  }
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t at = pos_;
    uint64_t dim = 0;
    TALLY_RETURN_IF_ERROR(read(&dim, "dimension"));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(at, fmt::format("dimension {} is {}, negative as a ggml int64", d, dim));
    }
    t.dims.push_back(static_cast<int64_t>(dim));
    if (__builtin_mul_overflow(n_elements, t.dims.back(), &n_elements)) {
      return fail(at, fmt::format("element count overflows int64 at dimension {} ({})", d, dim));
    }
  }

  const uint64_t type_at = pos_;
  TALLY_RETURN_IF_ERROR(read(&t.raw_type, "type"));
  auto traits = dtype_traits(t.raw_type);
  if (!traits) return fail(type_at, fmt::format("type {} is not a ggml tensor type", t.raw_type));
  t.type = static_cast<DType>(t.raw_type);
  auto row_bytes = dtype_row_bytes_checked(t.raw_type, t.dims[0]);
  if (!row_bytes) {
    return fail(type_at, fmt::format("row length {} is not a multiple of {}'s block of {}", t.dims[0], traits->name,
                                     traits->block_size));
  }
  int64_t n_bytes = *row_bytes;
  for (uint32_t d = 1; d < n_dims; ++d) {
    if (__builtin_mul_overflow(n_bytes, t.dims[d], &n_bytes)) {
      return fail(type_at, "byte size overflows int64");
    }
  }
  t.n_bytes = static_cast<uint64_t>(n_bytes);
  TALLY_RETURN_IF_ERROR(read(&t.offset, "data offset"));
  out.tensors_.push_back(std::move(t));
  return {};
}

// Every tensor lies in the data section, at an aligned offset, and no two overlap.
Status GgufParser::place_tensors(GgufFile& out) {
  const uint64_t align = out.alignment_;
  const uint64_t end_of_infos = pos_;
  out.data_offset_ = (pos_ + align - 1) / align * align;  // pos_ <= size, align <= 2^31: no overflow
  if (out.tensors_.empty()) return {};
  if (out.data_offset_ > bytes_.size()) {
    enter("data section");
    return fail(end_of_infos, fmt::format("data section would start at {}, past the end of the file ({} bytes)",
                                          out.data_offset_, bytes_.size()));
  }
  const uint64_t data_bytes = bytes_.size() - out.data_offset_;
  for (size_t i = 0; i < out.tensors_.size(); ++i) {
    GgufTensorInfo& t = out.tensors_[i];
    enter("tensor info", static_cast<int64_t>(i), t.name);
    const uint64_t at = tensor_info_offsets_[i];
    if (t.offset % align != 0) {
      return fail(at, fmt::format("data offset {} is not a multiple of the alignment {}", t.offset, align));
    }
    if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset) {
      return fail(at, fmt::format("data [{}, {}+{}) runs past the end of the data section ({} bytes at file offset {})",
                                  t.offset, t.offset, t.n_bytes, data_bytes, out.data_offset_));
    }
    t.data = bytes_.data() + out.data_offset_ + t.offset;
  }
  std::vector<size_t> order(out.tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return out.tensors_[a].offset < out.tensors_[b].offset;
  });
  size_t widest = order[0];  // the tensor reaching furthest so far
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = out.tensors_[widest];
    const GgufTensorInfo& cur = out.tensors_[order[k]];
    if (cur.n_bytes > 0 && prev.offset + prev.n_bytes > cur.offset) {
      enter("tensor info", static_cast<int64_t>(order[k]), cur.name);
      return fail(tensor_info_offsets_[order[k]],
                  fmt::format("data [{}, {}) overlaps tensor '{}' [{}, {})", cur.offset, cur.offset + cur.n_bytes,
                              prev.name.substr(0, 80), prev.offset, prev.offset + prev.n_bytes));
    }
    if (cur.offset + cur.n_bytes > prev.offset + prev.n_bytes) widest = order[k];
  }
  return {};
}

Status GgufParser::parse(GgufFile& out) {
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  TALLY_RETURN_IF_ERROR(parse_header(out, &n_tensors, &n_kv));
  TALLY_RETURN_IF_ERROR(parse_metadata(out, n_kv));
  out.tensors_.reserve(std::min(n_tensors, kMaxReserve));
  out.tensor_index_.reserve(std::min(n_tensors, kMaxReserve));
  tensor_info_offsets_.reserve(std::min(n_tensors, kMaxReserve));
  for (uint64_t i = 0; i < n_tensors; ++i) TALLY_RETURN_IF_ERROR(parse_tensor_info(out, i));
  return place_tensors(out);
}

}  // namespace tally::io
