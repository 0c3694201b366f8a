// Small synthetic models for the quant tests: model-like shapes that are cheap to write, and a
// vocab GGUF made in the test (so most tests need no ../shared data).
#pragma once

#include <cstdint>
#include <string>

#include "synth/synthetic_spec.h"

namespace tally_test {

// A llama-like shape: n_layers blocks, n_embd 256, 4 heads of 64 (2 kv heads), n_ff 512,
// n_vocab tokens. qwen2 = true: qkv biases and tied embeddings, rope base 1e6.
tally::synth::SyntheticModelSpec tiny_spec(int64_t n_layers, int64_t n_vocab, bool qwen2 = false);

// Writes a vocab-only GGUF of n_tokens SentencePiece-like tokens ("tok0", ...; scores, types,
// bos/eos ids, a general.* key that must not be copied) and returns its path.
std::string write_tiny_vocab(const std::string& dir, int64_t n_tokens);

}  // namespace tally_test
