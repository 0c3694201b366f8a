// libFuzzer target: a Hugging Face tokenizer.json mapped to a TokenizerVocab
// (tokenizer_vocab_from_hf) and built into a Tokenizer. Any input must give a Tokenizer or an
// error with a message; a built one must encode and decode without crashing.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto vocab = tally::tokenizer_vocab_from_hf(text, nlohmann::json());
  if (!vocab.ok()) {
    if (vocab.status().message().empty()) __builtin_trap();
    return 0;
  }
  auto tok = tally::Tokenizer::from_vocab(std::move(vocab).value());
  if (!tok.ok()) {
    if (tok.status().message().empty()) __builtin_trap();
    return 0;
  }
  const auto ids = (*tok)->encode("Hello  world\n 123 <s>\xE2\x96\x81 e\xCC\x81", true, true);
  (void)(*tok)->decode(ids, false);
  return 0;
}
