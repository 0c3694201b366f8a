#include "tokenizer/llama2c_tokenizer.h"

#include <cstring>
#include <string_view>

#include "base/mapped_file.h"

namespace tally {

namespace {

template <typename T>
T read_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // little-endian hosts only, as llama2.c itself
  return v;
}

std::string to_spm_text(std::string_view raw, int32_t id) {
  if ((id == 1 && raw == "\n<s>\n") || (id == 2 && raw == "\n</s>\n")) {
    return std::string(raw.substr(1, raw.size() - 2));
  }
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    if (c == ' ') {
      out.append("\xE2\x96\x81");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

TokenType type_of(std::string_view text, int32_t id) {
  if (id == 0) return TokenType::kUnknown;
  if (id == 1 || id == 2) return TokenType::kControl;
  const bool byte = text.size() == 6 && text.substr(0, 3) == "<0x" && text[5] == '>';
  return byte ? TokenType::kByte : TokenType::kNormal;
}

}  // namespace

Result<TokenizerVocab> parse_llama2c_tokenizer(std::span<const uint8_t> bytes,
                                               int32_t vocab_size) {
  if (bytes.size() < 4) {
    return make_error(ErrorCode::kFormat, "llama2.c tokenizer: {} bytes, no header", bytes.size());
  }
  TokenizerVocab v;
  v.kind = TokenizerKind::kSpm;
  size_t pos = 4;  // max_token_length: not needed
  auto want_more = [&] {
    return vocab_size == 0 || static_cast<int32_t>(v.tokens.size()) < vocab_size;
  };
  while (pos < bytes.size() && want_more()) {
    const auto id = static_cast<int32_t>(v.tokens.size());
    if (bytes.size() - pos < 8) {
      return make_error(ErrorCode::kFormat, "llama2.c tokenizer: token {} header cut at byte {}",
                        id, pos);
    }
    const auto score = read_le<float>(bytes.data() + pos);
    const auto len = read_le<int32_t>(bytes.data() + pos + 4);
    pos += 8;
    if (len < 0 || static_cast<size_t>(len) > bytes.size() - pos) {
      return make_error(ErrorCode::kFormat,
                        "llama2.c tokenizer: token {} length {} at byte {} past the end ({} bytes)",
                        id, len, pos - 4, bytes.size());
    }
    const std::string_view raw(reinterpret_cast<const char*>(bytes.data() + pos), len);
    pos += len;
    v.tokens.push_back(to_spm_text(raw, id));
    v.scores.push_back(score);
    v.types.push_back(type_of(v.tokens.back(), id));
  }
  if (vocab_size > 0 && static_cast<int32_t>(v.tokens.size()) < vocab_size) {
    return make_error(ErrorCode::kFormat, "llama2.c tokenizer: {} tokens, the model needs {}",
                      v.tokens.size(), vocab_size);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}

Result<TokenizerVocab> read_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  TALLY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto vocab = parse_llama2c_tokenizer(file.bytes(), vocab_size);
  if (!vocab.ok()) return vocab.status().with_context(path);
  return vocab;
}

}  // namespace tally
