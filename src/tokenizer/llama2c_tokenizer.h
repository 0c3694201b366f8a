// A Tokenizer vocabulary from llama2.c's tokenizer.bin, read by io's llama2.c importer (the
// same conversion llama.cpp's convert-llama2c-to-ggml makes: U+2581 for spaces, "<s>"/"</s>"
// for ids 1 and 2, byte and control types), with SPM defaults BOS 1, EOS 2, unknown 0,
// add_bos and add_space_prefix. run.c's encoder equals the SPM encoder on it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "tokenizer/tokenizer_vocab.h"

namespace tally {

// vocab_size: the model's (tokenizer.bin does not record it).
Result<TokenizerVocab> parse_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size);
Result<TokenizerVocab> read_llama2c_tokenizer(const std::string& path, int32_t vocab_size);

}  // namespace tally
