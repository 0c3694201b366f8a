// Python semantics over Values: str() and repr() text, ==, <, and the UTF-8 code point view
// of strings that len(), indexing and slicing use (Python counts characters, not bytes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "template/jinja/value.h"

namespace tally::jinja {

// str(v): strings as they are, None -> "None", True -> "True", containers as their repr,
// undefined -> "". A kLimit error once `out` passes `limit` bytes: a list may hold a
// thousand references to one long string.
std::string py_str(const Value& v, size_t limit);
void py_str_append(std::string& out, const Value& v, size_t limit);
// repr(v): strings quoted ('a', "it's").
void py_repr_append(std::string& out, const Value& v, size_t limit);
// repr(float): shortest round-trip digits, "1.0", "1e+16", "inf".
std::string py_float_repr(double d);

// a == b (1 == 1.0 == True; lists and dicts compare by content).
bool py_equal(const Value& a, const Value& b);
// a < b for numbers, strings and lists; a render error for other pairs.
bool py_less(const Value& a, const Value& b);

// Number of code points (ill-formed bytes count one each).
size_t utf8_length(std::string_view s);
// Byte offset of each code point, plus s.size() at the end: [n_chars + 1].
std::vector<size_t> utf8_offsets(std::string_view s);

// Python's str.isspace() set (ASCII and Unicode white space).
bool py_is_space(uint32_t codepoint);
// s without leading/trailing white space (chars empty) or without any of `chars`.
std::string_view py_strip(std::string_view s, std::string_view chars, bool left, bool right,
                          bool default_chars);

}  // namespace tally::jinja
