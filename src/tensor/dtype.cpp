#include "tensor/dtype.h"

#include <array>

#include "base/ascii.h"
#include "base/check.h"

namespace tally {

namespace {

struct Entry {
  uint32_t raw;
  DTypeTraits traits;
};

// Block sizes and byte counts follow ggml's type table (ggml.c type_traits).
constexpr std::array kTypes = {
    Entry{0, {"f32", 1, 4, true}},          Entry{1, {"f16", 1, 2, true}},
    Entry{2, {"q4_0", 32, 18, true}},       Entry{3, {"q4_1", 32, 20, true}},
    Entry{6, {"q5_0", 32, 22, true}},      Entry{7, {"q5_1", 32, 24, true}},
    Entry{8, {"q8_0", 32, 34, true}},       Entry{9, {"q8_1", 32, 36, false}},
    Entry{10, {"q2_K", 256, 84, true}},    Entry{11, {"q3_K", 256, 110, true}},
    Entry{12, {"q4_K", 256, 144, true}},    Entry{13, {"q5_K", 256, 176, true}},
    Entry{14, {"q6_K", 256, 210, true}},    Entry{15, {"q8_K", 256, 292, false}},
    Entry{16, {"iq2_xxs", 256, 66, false}}, Entry{17, {"iq2_xs", 256, 74, false}},
    Entry{18, {"iq3_xxs", 256, 98, false}}, Entry{19, {"iq1_s", 256, 50, false}},
    Entry{20, {"iq4_nl", 32, 18, true}},   Entry{21, {"iq3_s", 256, 110, false}},
    Entry{22, {"iq2_s", 256, 82, false}},   Entry{23, {"iq4_xs", 256, 136, true}},
    Entry{24, {"i8", 1, 1, false}},         Entry{25, {"i16", 1, 2, false}},
    Entry{26, {"i32", 1, 4, false}},        Entry{27, {"i64", 1, 8, false}},
    Entry{28, {"f64", 1, 8, false}},        Entry{29, {"iq1_m", 256, 56, false}},
    Entry{30, {"bf16", 1, 2, true}},        Entry{34, {"tq1_0", 256, 54, false}},
    Entry{35, {"tq2_0", 256, 66, false}},   Entry{39, {"mxfp4", 32, 17, false}},
};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t raw) {
  for (const auto& e : kTypes)
    if (e.raw == raw) return e.traits;
  return std::nullopt;
}

const DTypeTraits& dtype_info(DType type) {
  for (const auto& e : kTypes)
    if (e.raw == static_cast<uint32_t>(type)) return e.traits;
  TALLY_CHECK(false, "unknown dtype {}", static_cast<uint32_t>(type));
  __builtin_unreachable();
}

std::string_view dtype_name(DType type) { return dtype_info(type).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& e : kTypes)
    if (ascii_iequals(e.traits.name, name)) return static_cast<DType>(e.raw);
  return std::nullopt;
}

int64_t dtype_row_bytes(DType type, int64_t n) {
  const auto& t = dtype_info(type);
  TALLY_CHECK(n % t.block_size == 0, "row of {} elements is not a multiple of {}'s block of {}", n,
              t.name, t.block_size);
  return n / t.block_size * t.block_bytes;
}

std::optional<int64_t> dtype_row_bytes_checked(uint32_t raw, int64_t n) {
  auto t = dtype_traits(raw);
  if (!t || n < 0 || n % t->block_size != 0) return std::nullopt;
  int64_t out = 0;
  if (__builtin_mul_overflow(n / t->block_size, t->block_bytes, &out)) return std::nullopt;
  return out;
}

}  // namespace tally
