// Splits text into the words that byte-level BPE merges within, by a list of regexes applied
// in order, as llama.cpp does: each regex cuts every current piece into its matches and the
// text between them (kept as pieces of their own), and the next regex cuts those pieces again.
// A regex sees one piece at a time, so lookaheads such as \s+(?!\S) and anchors such as $
// stop at the piece's end.
//
// PCRE2 in UTF + UCP mode (\p{L}, \s, ... follow Unicode), JIT-compiled where available.
// Compiled patterns are shared read-only: split() may run on many threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tally::tok {

struct WordSpan {
  size_t offset = 0;
  size_t length = 0;
};

class PreTokenizer {
 public:
  static Result<std::unique_ptr<PreTokenizer>> create(
      const std::vector<std::string_view>& patterns);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // `text` must be valid UTF-8 (see utf8_sanitize). Replaces `out` with non-empty spans that
  // cover the text in order.
  void split(std::string_view text, std::vector<WordSpan>& out) const;

  // Convenience for tests: the words themselves.
  std::vector<std::string> split_words(std::string_view text) const;

 private:
  class Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace tally::tok
