#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/utf8_stream.h"

namespace tally {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer)
    : tokenizer_(tokenizer),
      strip_after_bos_(tokenizer.kind() == TokenizerKind::kSpm && tokenizer.add_space_prefix()) {}

std::string StreamingDetokenizer::push(int32_t id) {
  bytes_.clear();
  tokenizer_.append_token_bytes(id, /*render_special=*/false, bytes_);
  if (after_bos_ && strip_after_bos_ && !bytes_.empty() && bytes_[0] == ' ') bytes_.erase(0, 1);
  after_bos_ = id >= 0 && id == tokenizer_.bos();
  std::string out;
  utf8_.push(bytes_, out);
  return out;
}

std::string StreamingDetokenizer::flush() { return utf8_.finish(); }

void StreamingDetokenizer::reset() {
  utf8_ = tok::Utf8Stream();
  after_bos_ = false;
}

}  // namespace tally
