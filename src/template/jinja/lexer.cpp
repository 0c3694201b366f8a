#include "template/jinja/lexer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>

#include "tokenizer/utf8.h"

namespace tally::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Longest first, so "**" wins over "*".
constexpr std::array<std::string_view, 25> kOperators = {
    "**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
    ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ".", ",", ":", "|"};

std::string normalize_newlines(std::string_view s, bool keep_trailing_newline) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options)
      : src_(normalize_newlines(source, options.keep_trailing_newline)), opt_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (i_ < src_.size()) {
      const size_t tag = find_tag_start(i_);
      emit_text(i_, tag);
      if (tag == src_.size()) break;
      lex_tag(tag);
    }
    Token eof;
    eof.kind = TokenKind::kEof;
    eof.pos = pos_at(src_.size());
    tokens_.push_back(std::move(eof));
    return std::move(tokens_);
  }

 private:
  SourcePos pos_at(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<uint32_t>(line),
            static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
  }

  [[noreturn]] void fail(size_t offset, std::string message) const {
    throw JinjaError(JinjaError::Kind::kSyntax, std::move(message), pos_at(offset));
  }

  size_t find_tag_start(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
        return p;
      }
    }
    return src_.size();
  }

  // The text in [begin, tag) with the white-space rules of the tag at `tag` applied.
  void emit_text(size_t begin, size_t tag) {
    size_t end = tag;
    if (tag < src_.size()) {
      const char kind = src_[tag + 1];
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (modifier == '-') {
        while (end > begin && is_space(src_[end - 1])) --end;
      } else if (kind != '{' && modifier != '+' && opt_.lstrip_blocks) {
        size_t line_begin = end;
        while (line_begin > begin &&
               (src_[line_begin - 1] == ' ' || src_[line_begin - 1] == '\t' ||
                src_[line_begin - 1] == '\f' || src_[line_begin - 1] == '\v')) {
          --line_begin;
        }
        const bool at_line_start =
            line_begin > begin ? src_[line_begin - 1] == '\n' : line_starting_;
        if (at_line_start) end = line_begin;
      }
    }
    if (end > begin) {
      Token t;
      t.kind = TokenKind::kText;
      t.text = src_.substr(begin, end - begin);
      t.pos = pos_at(begin);
      tokens_.push_back(std::move(t));
    }
  }

  // After a tag's closing delimiter at [close, close + len): "-" strips the white space that
  // follows, trim_blocks (block and comment tags) one newline.
  void finish_tag(size_t after, bool strip_after, bool trim_newline) {
    i_ = after;
    line_starting_ = false;
    if (strip_after) {
      while (i_ < src_.size() && is_space(src_[i_])) ++i_;
      line_starting_ = i_ > after && src_[i_ - 1] == '\n';
    } else if (trim_newline && i_ < src_.size() && src_[i_] == '\n') {
      ++i_;
      line_starting_ = true;
    }
  }

  void lex_tag(size_t tag) {
    const char kind = src_[tag + 1];
    if (kind == '#') {
      const size_t close = src_.find("#}", tag + 2);
      if (close == std::string::npos) fail(tag, "unterminated comment");
      const bool strip_after = close > tag + 2 && src_[close - 1] == '-';
      const bool plus = close > tag + 2 && src_[close - 1] == '+';
      finish_tag(close + 2, strip_after, opt_.trim_blocks && !plus);
      return;
    }
    const bool block = kind == '%';
    size_t p = tag + 2;
    if (p < src_.size() && (src_[p] == '-' || (block && src_[p] == '+'))) ++p;
    Token begin;
    begin.kind = block ? TokenKind::kBlockBegin : TokenKind::kVarBegin;
    begin.pos = pos_at(tag);
    const size_t first_token = tokens_.size() + 1;
    tokens_.push_back(std::move(begin));
    lex_expression(tag, p, block);
    if (block && tokens_.size() > first_token && tokens_[first_token].kind == TokenKind::kName &&
        tokens_[first_token].text == "raw") {
      lex_raw(tag, first_token);
    }
  }

  // Tokens up to the closing "}}" / "%}" (with "-" or "+") outside any brackets.
  void lex_expression(size_t tag, size_t p, bool block) {
    int depth = 0;  // ( [ { nesting: "}}" inside a dict literal does not close the tag
    for (;;) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) fail(tag, block ? "unterminated '{%' tag" : "unterminated '{{' tag");
      if (depth == 0 && try_close(p, block)) return;
      p = lex_one(p, depth);
    }
  }

  bool try_close(size_t p, bool block) {
    const std::string_view rest = std::string_view(src_).substr(p);
    const std::string_view close = block ? "%}" : "}}";
    char modifier = '\0';
    size_t len = 0;
    if (rest.substr(0, 2) == close) {
      len = 2;
    } else if (rest.size() >= 3 && (rest[0] == '-' || (block && rest[0] == '+')) &&
               rest.substr(1, 2) == close) {
      modifier = rest[0];
      len = 3;
    } else {
      return false;
    }
    Token end;
    end.kind = block ? TokenKind::kBlockEnd : TokenKind::kVarEnd;
    end.pos = pos_at(p);
    tokens_.push_back(std::move(end));
    finish_tag(p + len, modifier == '-', block && opt_.trim_blocks && modifier != '+');
    return true;
  }

  size_t lex_one(size_t p, int& depth) {
    const char c = src_[p];
    if (is_name_start(c)) {
      size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      push(TokenKind::kName, src_.substr(p, e - p), p);
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    for (std::string_view op : kOperators) {
      if (std::string_view(src_).substr(p, op.size()) == op) {
        if (op == "(" || op == "[" || op == "{") ++depth;
        if (op == ")" || op == "]" || op == "}") {
          if (depth == 0) fail(p, fmt::format("unexpected '{}'", op));
          --depth;
        }
        push(TokenKind::kOp, std::string(op), p);
        return p + op.size();
      }
    }
    fail(p, fmt::format("unexpected character '{}'", c));
  }

  size_t lex_number(size_t p) {
    size_t e = p;
    auto digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() &&
                                                       is_digit(src_[e + 1])))) {
        ++e;
      }
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      ++e;
      digits();
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && is_digit(src_[x])) {
        e = x;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = p; k < e; ++k) {
      if (src_[k] != '_') text.push_back(src_[k]);
    }
    Token t;
    t.pos = pos_at(p);
    t.text = text;
    if (is_float) {
      t.kind = TokenKind::kFloat;
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      t.kind = TokenKind::kInt;
      errno = 0;
      char* end_ptr = nullptr;
      const long long v = std::strtoll(text.c_str(), &end_ptr, 10);
      if (errno == ERANGE) fail(p, "integer literal out of range");
      t.int_value = v;
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t k = p + 1;
    for (;;) {
      if (k >= src_.size()) fail(p, "unterminated string literal");
      const char c = src_[k];
      if (c == quote) break;
      if (c != '\\' || k + 1 >= src_.size()) {
        value.push_back(c);
        ++k;
        continue;
      }
      k = unescape(k, value);
    }
    push(TokenKind::kString, std::move(value), p);
    return k + 1;
  }

  // Python's string escapes at src_[k] == '\\'; unknown ones stay as written.
  size_t unescape(size_t k, std::string& out) {
    const char e = src_[k + 1];
    switch (e) {
      case 'n':
        out.push_back('\n');
        return k + 2;
      case 't':
        out.push_back('\t');
        return k + 2;
      case 'r':
        out.push_back('\r');
        return k + 2;
      case '\\':
        out.push_back('\\');
        return k + 2;
      case '\'':
        out.push_back('\'');
        return k + 2;
      case '"':
        out.push_back('"');
        return k + 2;
      case 'a':
        out.push_back('\a');
        return k + 2;
      case 'b':
        out.push_back('\b');
        return k + 2;
      case 'f':
        out.push_back('\f');
        return k + 2;
      case 'v':
        out.push_back('\v');
        return k + 2;
      case '\n':
        return k + 2;  // line continuation
      default:
        break;
    }
    const size_t n_hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (n_hex > 0) {
      uint32_t cp = 0;
      for (size_t h = 0; h < n_hex; ++h) {
        const int d = k + 2 + h < src_.size() ? hex_value(src_[k + 2 + h]) : -1;
        if (d < 0) fail(k, fmt::format("truncated \\{} escape", e));
        cp = cp * 16 + static_cast<uint32_t>(d);
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail(k, "invalid code point escape");
      tok::utf8_append(out, cp);
      return k + 2 + n_hex;
    }
    if (e >= '0' && e <= '7') {
      uint32_t cp = 0;
      size_t m = k + 1;
      for (int n = 0; n < 3 && m < src_.size() && src_[m] >= '0' && src_[m] <= '7'; ++n, ++m) {
        cp = cp * 8 + static_cast<uint32_t>(src_[m] - '0');
      }
      tok::utf8_append(out, cp);
      return m;
    }
    out.push_back('\\');
    return k + 1;
  }

  // {% raw %} ... {% endraw %}: the tokens of the opening tag are replaced by the text up to
  // the closing tag, taken verbatim.
  void lex_raw(size_t tag, size_t name_index) {
    if (tokens_.size() != name_index + 2 || tokens_.back().kind != TokenKind::kBlockEnd) {
      fail(tag, "'raw' takes no arguments");
    }
    tokens_.resize(name_index - 1);
    const size_t body = i_;
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      const char modifier = q < src_.size() ? src_[q] : '\0';
      if (modifier == '-' || modifier == '+') ++q;
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_space(src_[q])) ++q;
      const char close_mod = q < src_.size() ? src_[q] : '\0';
      if (close_mod == '-' || close_mod == '+') ++q;
      if (src_.compare(q, 2, "%}") != 0) continue;
      emit_text(body, p);
      finish_tag(q + 2, close_mod == '-', opt_.trim_blocks && close_mod != '+');
      return;
    }
    fail(tag, "missing '{% endraw %}'");
  }

  void push(TokenKind kind, std::string text, size_t offset) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.pos = pos_at(offset);
    tokens_.push_back(std::move(t));
  }

  std::string src_;
  LexOptions opt_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  size_t i_ = 0;
  bool line_starting_ = true;  // the previous tag's end consumed a newline (or at the start)
};

}  // namespace

std::vector<Token> lex_template(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace tally::jinja
