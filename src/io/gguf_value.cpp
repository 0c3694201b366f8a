// GgufValue accessors and the human-readable form `tally info` prints.
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "io/gguf.h"

namespace tally::io {

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "unknown";
}

namespace {

bool is_unsigned(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kU16 || t == GgufType::kU32 || t == GgufType::kU64;
}
bool is_signed(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

// Quoted, with control bytes and the quote escaped so a hostile string cannot garble a
// terminal. Bytes >= 0x80 pass through: pieces are UTF-8 (or raw bytes; printed as is).
void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_display(std::string& out, const GgufValue& v, size_t max_items) {
  switch (v.type) {
    case GgufType::kBool: out += v.num.u64 ? "true" : "false"; return;
    case GgufType::kString: append_quoted(out, v.str); return;
    case GgufType::kF32: out += fmt::format("{}", static_cast<float>(v.num.f64)); return;
    case GgufType::kF64: out += fmt::format("{}", v.num.f64); return;
    case GgufType::kArray: {
      out += '[';
      const size_t n = v.array_size();
      const size_t shown = std::min(max_items, n);
      for (size_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        append_display(out, v.item(i), max_items);
      }
      if (shown < n) out += fmt::format("{}... ({} items)", shown ? ", " : "", n);
      out += ']';
      return;
    }
    default:
      if (is_unsigned(v.type)) {
        out += fmt::format("{}", v.num.u64);
      } else {
        out += fmt::format("{}", v.num.i64);
      }
  }
}

}  // namespace

namespace {

template <typename T>
T load_packed(const uint8_t* at) {
  T x;
  std::memcpy(&x, at, sizeof(T));
  return x;
}

}  // namespace

GgufValue GgufValue::item(size_t i) const {
  if (!packed) return items[i];
  GgufValue v;
  v.type = elem_type;
  if (elem_type == GgufType::kString) {
    const uint8_t* at = packed + packed_offsets[i];
    const auto len = load_packed<uint64_t>(at);
    v.str = std::string_view(reinterpret_cast<const char*>(at + sizeof(uint64_t)), len);
    return v;
  }
  switch (elem_type) {
    case GgufType::kU8: v.num.u64 = packed[i]; break;
    case GgufType::kBool: v.num.u64 = packed[i]; break;
    case GgufType::kI8: v.num.i64 = static_cast<int8_t>(packed[i]); break;
    case GgufType::kU16: v.num.u64 = load_packed<uint16_t>(packed + 2 * i); break;
    case GgufType::kI16: v.num.i64 = load_packed<int16_t>(packed + 2 * i); break;
    case GgufType::kU32: v.num.u64 = load_packed<uint32_t>(packed + 4 * i); break;
    case GgufType::kI32: v.num.i64 = load_packed<int32_t>(packed + 4 * i); break;
    case GgufType::kF32: v.num.f64 = load_packed<float>(packed + 4 * i); break;
    case GgufType::kU64: v.num.u64 = load_packed<uint64_t>(packed + 8 * i); break;
    case GgufType::kI64: v.num.i64 = load_packed<int64_t>(packed + 8 * i); break;
    case GgufType::kF64: v.num.f64 = load_packed<double>(packed + 8 * i); break;
    case GgufType::kString:
    case GgufType::kArray: break;  // strings above; arrays of arrays are never packed
  }
  return v;
}

bool GgufValue::is_integer() const { return is_unsigned(type) || is_signed(type); }

std::optional<int64_t> GgufValue::as_int() const {
  if (is_signed(type)) return num.i64;
  if (is_unsigned(type) || type == GgufType::kBool) {
    if (num.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(num.u64);
  }
  return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
  if (is_float()) return num.f64;
  if (is_signed(type)) return static_cast<double>(num.i64);
  if (is_unsigned(type)) return static_cast<double>(num.u64);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type != GgufType::kBool) return std::nullopt;
  return num.u64 != 0;
}

std::optional<std::string_view> GgufValue::as_string() const {
  if (type != GgufType::kString) return std::nullopt;
  return str;
}

std::string GgufValue::to_display_string(size_t max_items) const {
  std::string out;
  append_display(out, *this, max_items);
  return out;
}

int64_t GgufTensorInfo::n_elements() const {
  // The parser checked that this product fits in int64.
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace tally::io
