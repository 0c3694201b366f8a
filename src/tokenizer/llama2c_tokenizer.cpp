#include "tokenizer/llama2c_tokenizer.h"

#include "base/mapped_file.h"
#include "io/llama2c.h"

namespace tally {

namespace {

Result<TokenizerVocab> to_tokenizer_vocab(io::Llama2cVocab in) {
  TokenizerVocab v;
  v.kind = TokenizerKind::kSpm;
  v.tokens = std::move(in.pieces);
  v.scores = std::move(in.scores);
  v.types.reserve(in.types.size());
  for (int32_t t : in.types) {
    const bool known = t >= 0 && t <= static_cast<int32_t>(TokenType::kByte);
    v.types.push_back(known ? static_cast<TokenType>(t) : TokenType::kUndefined);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}

}  // namespace

Result<TokenizerVocab> parse_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size) {
  TALLY_ASSIGN_OR_RETURN(io::Llama2cVocab vocab,
                         io::llama2c_read_tokenizer(bytes, vocab_size, "<memory>"));
  return to_tokenizer_vocab(std::move(vocab));
}

Result<TokenizerVocab> read_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  TALLY_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  TALLY_ASSIGN_OR_RETURN(io::Llama2cVocab vocab,
                         io::llama2c_read_tokenizer(file.bytes(), vocab_size, path));
  return to_tokenizer_vocab(std::move(vocab));
}

}  // namespace tally
