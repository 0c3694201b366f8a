// llama2.c's tokenizer.bin (as run.c reads it): int32 max_token_length, then per token a
// float32 score, an int32 byte length and the bytes (no terminator); the token count is the
// model's vocab_size. Converted to an SPM TokenizerVocab the way llama.cpp's
// convert-llama2c-to-ggml does: spaces become U+2581, the "\n<s>\n" / "\n</s>\n" forms of
// ids 1 and 2 become "<s>" / "</s>", <0xXX> are byte tokens, id 0 is unknown.
// run.c's encoder then equals the SPM encoder with add_space_prefix (for non-empty text).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "tokenizer/tokenizer_vocab.h"

namespace tally {

// vocab_size 0: read tokens until the end of the bytes.
Result<TokenizerVocab> parse_llama2c_tokenizer(std::span<const uint8_t> bytes,
                                               int32_t vocab_size = 0);
Result<TokenizerVocab> read_llama2c_tokenizer(const std::string& path, int32_t vocab_size = 0);

}  // namespace tally
