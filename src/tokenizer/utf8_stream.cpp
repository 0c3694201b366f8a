#include "tokenizer/utf8_stream.h"

#include "tokenizer/utf8.h"

namespace tally::tok {

void Utf8Stream::push(std::string_view piece, std::string& out) {
  bytes_.assign(held_);
  bytes_ += piece;
  held_.clear();
  size_t pos = 0;
  while (pos < bytes_.size()) {
    const Utf8Step step = utf8_step(bytes_, pos);
    if (step.kind == Utf8Step::kIncomplete) {
      held_.assign(bytes_, pos, std::string::npos);
      break;
    }
    if (step.kind == Utf8Step::kInvalid) {
      out += kReplacementChar;
    } else {
      out.append(bytes_, pos, step.length);
    }
    pos += step.length;
  }
}

std::string Utf8Stream::finish() {
  if (held_.empty()) return {};
  held_.clear();
  return std::string(kReplacementChar);
}

std::string utf8_valid(std::string_view s) {
  Utf8Stream stream;
  std::string out = stream.push(s);
  out += stream.finish();
  return out;
}

}  // namespace tally::tok
