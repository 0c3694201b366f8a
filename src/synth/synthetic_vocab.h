// The tokenizer of a synthetic model: every tokenizer.* key of a vocab GGUF (llama.cpp's
// models/ggml-vocab-*.gguf), copied as is, with the per-token arrays (tokens, scores,
// token_type) padded up to the model's vocab size when the stand-in vocabulary is smaller.
//
// Padding tokens are "<|tally_placeholder_N|>" (N = token id) of type CONTROL (3), score 0:
// llama.cpp never produces a control token from text unless special parsing is on, and
// renders it as nothing, so the padded file tokenizes exactly like the vocab file it came
// from. A padded vocabulary is NOT the model's real tokenizer (Llama 3's 128256-token or
// Qwen2's 151936-token BPE are not available here): token ids, merges and pre-tokenization
// are those of the stand-in. It exists so tensor shapes are exact for speed measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace tally::synth {

constexpr int32_t kTokenTypeControl = 3;  // llama.cpp's LLAMA_TOKEN_TYPE_CONTROL

struct VocabCopy {
  int64_t n_file_tokens = 0;   // tokens of the vocab file
  int64_t n_placeholders = 0;  // tokens added to reach n_vocab
};

// Copies `vocab`'s tokenizer.* metadata into `out` (in the file's order), padded to n_vocab;
// the first padding tokens take the texts of `added` (the model's own added tokens, where a
// reader looks them up by text), the rest are placeholders.
// Fails when the file has no tokenizer.ggml.tokens, more than n_vocab tokens, or per-token
// arrays whose lengths disagree.
Result<VocabCopy> copy_tokenizer_metadata(const io::GgufFile& vocab, int64_t n_vocab, io::GgufWriter& out,
                                          const std::vector<std::string>& added = {});

}  // namespace tally::synth
