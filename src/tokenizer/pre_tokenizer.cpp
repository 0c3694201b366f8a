#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/check.h"

namespace tally::tok {

namespace {

// Bytes of the UTF-8 character starting at s[pos] (s is valid UTF-8).
size_t char_length(const char* s, size_t pos) {
  const auto b = static_cast<uint8_t>(s[pos]);
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

// Per-call matching state: match data, and a JIT stack larger than the 32 KiB default so
// long runs (pages of spaces) do not fall back to the slower interpreter.
class MatchScratch {
 public:
  MatchScratch() {
    match_ = pcre2_match_data_create(8, nullptr);
    jit_stack_ = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    context_ = pcre2_match_context_create(nullptr);
    TALLY_CHECK(match_ && jit_stack_ && context_, "pcre2: out of memory");
    pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
  }
  ~MatchScratch() {
    pcre2_match_context_free(context_);
    pcre2_jit_stack_free(jit_stack_);
    pcre2_match_data_free(match_);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  pcre2_match_data* match() { return match_; }
  pcre2_match_context* context() { return context_; }

 private:
  pcre2_match_data* match_ = nullptr;
  pcre2_jit_stack* jit_stack_ = nullptr;
  pcre2_match_context* context_ = nullptr;
};

}  // namespace

class PreTokenizer::Regex {
 public:
  explicit Regex(pcre2_code* code) : code_(code) {}
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the matches of this regex in piece [offset, offset + length) of `text`, and the
  // unmatched text between them, to `out`.
  void split_piece(std::string_view text, WordSpan piece, MatchScratch& scratch,
                   std::vector<WordSpan>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.offset);
    size_t start = 0;
    size_t last_end = 0;
    while (start < piece.length) {
      int rc = pcre2_match(code_, subject, piece.length, start, PCRE2_NO_UTF_CHECK,
                           scratch.match(), scratch.context());
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        // JIT stack or match limit: retry with the interpreter, which uses the heap.
        rc = pcre2_match(code_, subject, piece.length, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                         scratch.match(), nullptr);
      }
      if (rc < 0) break;  // no (further) match: the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.match());
      const size_t begin = ov[0];
      const size_t end = ov[1];
      if (end == begin) {  // empty match: step over one character
        start = begin + char_length(text.data() + piece.offset, begin);
        continue;
      }
      if (begin > last_end) out.push_back({piece.offset + last_end, begin - last_end});
      out.push_back({piece.offset + begin, end - begin});
      last_end = end;
      start = end;
    }
    if (piece.length > last_end) out.push_back({piece.offset + last_end, piece.length - last_end});
  }

 private:
  pcre2_code* code_;
};

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(
    const std::vector<std::string_view>& patterns) {
  std::unique_ptr<PreTokenizer> pre(new PreTokenizer());
  for (std::string_view pattern : patterns) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return make_error(ErrorCode::kInternal, "pre-tokenizer regex '{}': {} at offset {}",
                        pattern, reinterpret_cast<const char*>(message), error_offset);
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: matching works without it
    pre->regexes_.push_back(std::make_unique<Regex>(code));
  }
  return pre;
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split(std::string_view text, std::vector<WordSpan>& out) const {
  out.clear();
  if (text.empty()) return;
  out.push_back({0, text.size()});
  MatchScratch scratch;
  std::vector<WordSpan> next;
  for (const auto& regex : regexes_) {
    next.clear();
    next.reserve(out.size() * 2);
    for (const WordSpan& piece : out) regex->split_piece(text, piece, scratch, next);
    out.swap(next);
  }
}

std::vector<std::string> PreTokenizer::split_words(std::string_view text) const {
  std::vector<WordSpan> spans;
  split(text, spans);
  std::vector<std::string> words;
  words.reserve(spans.size());
  for (const WordSpan& s : spans) words.emplace_back(text.substr(s.offset, s.length));
  return words;
}

}  // namespace tally::tok
