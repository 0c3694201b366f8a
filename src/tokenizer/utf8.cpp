#include "tokenizer/utf8.h"

namespace tally::tok {

namespace {

// Allowed range of the second byte for each lead byte (Unicode Table 3-7); the later
// continuation bytes are always 80..BF.
struct LeadInfo {
  uint8_t length;  // 0: not a lead byte
  uint8_t lo;
  uint8_t hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Step utf8_step(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  const LeadInfo info = lead_info(b0);
  if (info.length == 0) return {Utf8Step::kInvalid, 1, 0};
  if (info.length == 1) return {Utf8Step::kValid, 1, b0};
  static constexpr uint8_t kLeadMask[5] = {0, 0, 0x1F, 0x0F, 0x07};
  uint32_t cp = b0 & kLeadMask[info.length];
  for (uint8_t i = 1; i < info.length; ++i) {
    if (pos + i >= s.size()) return {Utf8Step::kIncomplete, i, 0};
    const auto b = static_cast<uint8_t>(s[pos + i]);
    const uint8_t lo = i == 1 ? info.lo : 0x80;
    const uint8_t hi = i == 1 ? info.hi : 0xBF;
    if (b < lo || b > hi) return {Utf8Step::kInvalid, i, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Step::kValid, info.length, cp};
}

size_t utf8_char_length(std::string_view s, size_t pos) {
  const Utf8Step step = utf8_step(s, pos);
  return step.kind == Utf8Step::kValid ? step.length : 1;
}

std::string utf8_sanitize(std::string_view s, bool per_byte) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind == Utf8Step::kValid) {
      out.append(s.substr(pos, step.length));
    } else {
      const size_t n_repl = per_byte ? step.length : 1;
      for (size_t i = 0; i < n_repl; ++i) out.append(kReplacementChar);
    }
    pos += step.length;
  }
  return out;
}

bool utf8_is_valid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const Utf8Step step = utf8_step(s, pos);
    if (step.kind != Utf8Step::kValid) return false;
    pos += step.length;
  }
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace tally::tok
