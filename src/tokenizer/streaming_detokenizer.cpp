#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/utf8.h"

namespace tally {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer)
    : tokenizer_(tokenizer),
      strip_after_bos_(tokenizer.kind() == TokenizerKind::kSpm && tokenizer.add_space_prefix()) {}

std::string StreamingDetokenizer::push(int32_t id) {
  bytes_.assign(pending_);
  pending_.clear();
  const size_t start = bytes_.size();
  tokenizer_.append_token_bytes(id, /*render_special=*/false, bytes_);
  if (after_bos_ && strip_after_bos_ && bytes_.size() > start && bytes_[start] == ' ') {
    bytes_.erase(start, 1);
  }
  after_bos_ = id >= 0 && id == tokenizer_.bos();

  std::string out;
  size_t pos = 0;
  while (pos < bytes_.size()) {
    const tok::Utf8Step step = tok::utf8_step(bytes_, pos);
    if (step.kind == tok::Utf8Step::kIncomplete) {
      pending_.assign(bytes_, pos, std::string::npos);
      break;
    }
    if (step.kind == tok::Utf8Step::kValid) {
      out.append(bytes_, pos, step.length);
    } else {
      out.append(tok::kReplacementChar);
    }
    pos += step.length;
  }
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out = pending_.empty() ? std::string() : std::string(tok::kReplacementChar);
  pending_.clear();
  return out;
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  after_bos_ = false;
}

}  // namespace tally
