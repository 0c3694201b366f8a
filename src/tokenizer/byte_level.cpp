#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace tally::tok {

namespace {

bool stands_for_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteLevelTables {
  std::array<std::string, 256> char_of_byte;
  std::array<int16_t, 512> byte_of_cp;  // every mapped code point is below U+0144

  ByteLevelTables() {
    byte_of_cp.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = stands_for_itself(b) ? static_cast<uint32_t>(b) : next++;
      utf8_append(char_of_byte[b], cp);
      byte_of_cp[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables kTables;
  return kTables;
}

}  // namespace

std::string_view byte_level_char(uint8_t b) { return tables().char_of_byte[b]; }

int byte_level_byte(uint32_t cp) {
  return cp < tables().byte_of_cp.size() ? tables().byte_of_cp[cp] : -1;
}

bool byte_level_decode(std::string_view text, std::string& out) {
  bool all_mapped = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = utf8_step(text, pos);
    const int b = step.kind == Utf8Step::kValid ? byte_level_byte(step.codepoint) : -1;
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.substr(pos, step.length));
      all_mapped = false;
    }
    pos += step.length;
  }
  return all_mapped;
}

void byte_level_encode(std::string_view bytes, std::string& out) {
  for (char c : bytes) out.append(byte_level_char(static_cast<uint8_t>(c)));
}

}  // namespace tally::tok
