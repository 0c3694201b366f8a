#include "server/utf8_stream.h"

#include "tokenizer/utf8.h"

namespace tally::server {

std::string Utf8Stream::push(std::string_view piece) {
  std::string bytes;
  bytes.reserve(held_.size() + piece.size());
  bytes += held_;
  bytes += piece;
  held_.clear();
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const tok::Utf8Step step = tok::utf8_step(bytes, pos);
    if (step.kind == tok::Utf8Step::kIncomplete) {
      held_.assign(bytes, pos, std::string::npos);
      break;
    }
    if (step.kind == tok::Utf8Step::kInvalid) {
      out += tok::kReplacementChar;
    } else {
      out.append(bytes, pos, step.length);
    }
    pos += step.length;
  }
  return out;
}

std::string Utf8Stream::finish() {
  if (held_.empty()) return {};
  held_.clear();
  return std::string(tok::kReplacementChar);
}

std::string utf8_valid(std::string_view s) {
  Utf8Stream stream;
  std::string out = stream.push(s);
  out += stream.finish();
  return out;
}

}  // namespace tally::server
