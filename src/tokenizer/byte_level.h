// GPT-2's byte-level alphabet: every byte is shown as one printable Unicode character so that
// BPE vocabularies can be stored as text. Bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF
// stand for themselves; the other 68 bytes (controls, space, DEL, U+0080..U+00A0, soft hyphen)
// become U+0100, U+0101, ... in byte order (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tally::tok {

// The UTF-8 form of the character that stands for byte `b`.
std::string_view byte_level_char(uint8_t b);

// The byte a code point stands for, or -1 when it is not part of the alphabet.
int byte_level_byte(uint32_t codepoint);

// Appends the raw bytes that a byte-level string stands for. Characters outside the alphabet
// (and ill-formed UTF-8) are copied through unchanged; returns false if there were any.
bool byte_level_decode(std::string_view text, std::string& out);

// Appends the byte-level form of raw bytes.
void byte_level_encode(std::string_view bytes, std::string& out);

}  // namespace tally::tok
