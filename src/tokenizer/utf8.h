// UTF-8 helpers for the tokenizers: strict decoding (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF) and replacement of ill-formed bytes by U+FFFD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tally::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// What the bytes at some position hold.
struct Utf8Step {
  enum Kind : uint8_t {
    kValid,       // a well-formed character of `length` bytes
    kInvalid,     // `length` bytes (a maximal ill-formed subpart) that can never become valid
    kIncomplete,  // a valid prefix cut short by the end of the input (`length` bytes)
  };
  Kind kind = kValid;
  uint8_t length = 0;
  uint32_t codepoint = 0;  // kValid only
};

// Classifies the bytes at s[pos] (pos < s.size()). Ill-formed input is cut into maximal
// subparts as Unicode's "U+FFFD substitution of maximal subparts" recommends.
Utf8Step utf8_step(std::string_view s, size_t pos);

// Bytes of the character at s[pos]: its length if well-formed, else 1 (each byte of an
// ill-formed sequence stands alone).
size_t utf8_char_length(std::string_view s, size_t pos);

// `s` with every ill-formed subpart replaced by U+FFFD (valid input is returned unchanged).
// `per_byte`: one U+FFFD per invalid byte (llama.cpp's BPE input rule) rather than one per
// maximal subpart.
std::string utf8_sanitize(std::string_view s, bool per_byte);

bool utf8_is_valid(std::string_view s);

// Appends the UTF-8 form of a code point (<= U+10FFFF).
void utf8_append(std::string& out, uint32_t codepoint);

}  // namespace tally::tok
