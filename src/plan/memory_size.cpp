#include "plan/memory_size.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "base/ascii.h"

namespace tally::plan {

namespace {

struct Unit {
  std::string_view name;  // lower case
  int64_t scale;
};

constexpr int64_t kKi = 1024;
constexpr int64_t kK = 1000;
constexpr std::array kUnits = {
    Unit{"", 1},
    Unit{"b", 1},
    Unit{"kib", kKi},
    Unit{"mib", kKi * kKi},
    Unit{"gib", kKi * kKi * kKi},
    Unit{"tib", kKi * kKi * kKi * kKi},
    Unit{"kb", kK},
    Unit{"mb", kK * kK},
    Unit{"gb", kK * kK * kK},
    Unit{"tb", kK * kK * kK * kK},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<int64_t> parse_memory_size(std::string_view text) {
  const std::string_view s = trim(text);
  size_t i = 0;
  bool seen_digit = false;
  bool seen_dot = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
    if (s[i] == '.') {
      if (seen_dot) break;
      seen_dot = true;
    } else {
      seen_digit = true;
    }
    ++i;
  }
  if (!seen_digit)
    return make_error(ErrorCode::kInvalidArgument,
                      "memory size '{}': expected a number with an optional unit, e.g. 80GiB, "
                      "24GB, 512MiB",
                      text);
  const std::string number(s.substr(0, i));
  const std::string unit = ascii_lower(trim(s.substr(i)));
  const Unit* found = nullptr;
  for (const auto& u : kUnits)
    if (u.name == unit) found = &u;
  if (found == nullptr) {
    if (unit == "k" || unit == "m" || unit == "g" || unit == "t")
      return make_error(ErrorCode::kInvalidArgument,
                        "memory size '{}': unit '{}' is ambiguous: write {}iB (powers of 1024) "
                        "or {}B (powers of 1000)",
                        text, unit, static_cast<char>(std::toupper(unit[0])),
                        static_cast<char>(std::toupper(unit[0])));
    return make_error(ErrorCode::kInvalidArgument,
                      "memory size '{}': unknown unit '{}' (use B, KiB, MiB, GiB, TiB, KB, MB, "
                      "GB or TB)",
                      text, unit);
  }
  if (!seen_dot) {
    // Integers stay exact: 1 TiB and plain byte counts must not go through a double.
    int64_t value = 0;
    for (char c : number) {
      if (value > (INT64_MAX - 9) / 10)
        return make_error(ErrorCode::kInvalidArgument, "memory size '{}' is too large", text);
      value = value * 10 + (c - '0');
    }
    if (value > INT64_MAX / found->scale)
      return make_error(ErrorCode::kInvalidArgument, "memory size '{}' is too large", text);
    return value * found->scale;
  }
  const long double value = std::strtold(number.c_str(), nullptr) * found->scale;
  if (!std::isfinite(value) || value >= 9.2e18L)
    return make_error(ErrorCode::kInvalidArgument, "memory size '{}' is too large", text);
  return static_cast<int64_t>(std::floor(value));
}

std::string format_bytes(int64_t bytes) {
  static constexpr std::array kNames = {"KiB", "MiB", "GiB", "TiB"};
  const bool negative = bytes < 0;
  const long double mag = negative ? -static_cast<long double>(bytes) : bytes;
  if (mag < kKi) return fmt::format("{} B", bytes);
  long double v = mag;
  size_t u = 0;
  v /= kKi;
  while (v >= kKi && u + 1 < kNames.size()) {
    v /= kKi;
    ++u;
  }
  return fmt::format("{}{:.2f} {}", negative ? "-" : "", static_cast<double>(v), kNames[u]);
}

}  // namespace tally::plan
