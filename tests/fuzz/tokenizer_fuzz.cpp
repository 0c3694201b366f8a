// libFuzzer target: the tokenizers on arbitrary bytes. The first byte picks one of three:
// stories260K's SentencePiece vocabulary (models/, byte fallback), a byte-level BPE with the
// gpt-2 pre-tokenizer, and the same with llama3's. Encoding never fails and gives ids in the
// vocabulary; for valid UTF-8 text, decode(encode(x)) == x (SPM: unless x holds U+2581, its
// space mark); decoding any ids never crashes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using tally::Tokenizer;

void require(bool cond) {
  if (!cond) __builtin_trap();
}

std::unique_ptr<Tokenizer> stories_spm() {
  auto f = tally::io::GgufFile::open(TALLY_SOURCE_DIR "/models/stories260K.gguf");
  require(f.ok());
  auto tok = Tokenizer::from_gguf(*f);
  require(tok.ok());
  return std::move(tok).value();
}

// Ids 0..255: the byte-level character of that byte; then merged pieces and added tokens.
std::unique_ptr<Tokenizer> small_bpe(const char* pre) {
  tally::TokenizerVocab v;
  v.kind = tally::TokenizerKind::kBpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.emplace_back(tally::tok::byte_level_char(static_cast<uint8_t>(b)));
  const std::string sp(tally::tok::byte_level_char(' '));
  for (const std::string& t : {std::string("he"), std::string("ll"), std::string("llo"),
                               sp + "t", sp + "th", sp + "the", std::string("in"), std::string("ing")}) {
    v.tokens.push_back(t);
  }
  v.merges = {"h e", "l l", "ll o", sp + " t", sp + "t h", sp + "th e", "i n", "in g"};
  v.tokens.push_back("<|endoftext|>");
  v.types.assign(v.tokens.size(), tally::TokenType::kNormal);
  v.types.back() = tally::TokenType::kControl;
  v.bos_id = v.eos_id = static_cast<int32_t>(v.tokens.size()) - 1;
  auto tok = Tokenizer::from_vocab(std::move(v));
  require(tok.ok());
  return std::move(tok).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Tokenizer> tokenizers[] = {stories_spm(), small_bpe("gpt-2"),
                                                          small_bpe("llama3")};
  if (size == 0) return 0;
  const Tokenizer& tok = *tokenizers[data[0] % 3];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  const std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
  for (const int32_t id : ids) require(id >= 0 && id < tok.n_vocab());
  // SentencePiece writes spaces as U+2581 and decodes that piece back to a space, so a text
  // that itself contains U+2581 comes back with spaces there (llama.cpp does the same).
  const bool spm_space_mark = tok.kind() == tally::TokenizerKind::kSpm &&
                              text.find("\xE2\x96\x81") != std::string_view::npos;
  if (tally::tok::utf8_is_valid(text) && !spm_space_mark) require(tok.decode(ids) == text);

  const std::vector<int32_t> special = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  for (const int32_t id : special) require(id >= 0 && id < tok.n_vocab());

  // Any ids decode (those outside the vocabulary give nothing).
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    raw.push_back(static_cast<int32_t>(static_cast<uint8_t>(text[i]) << 8 | static_cast<uint8_t>(text[i + 1])) - 4096);
  }
  volatile size_t sink = tok.decode(raw, /*skip_special=*/false).size();
  (void)sink;
  return 0;
}
