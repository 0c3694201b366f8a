// Import of Karpathy's llama2.c models: the legacy "version 0" checkpoint (run.c's format)
// and its tokenizer .bin, converted to a GGUF of architecture "llama" laid out the way
// llama.cpp's own convert-llama2c-to-ggml writes it (same keys, tensor names, order, shapes
// and bytes), so llama.cpp can load what tally writes and vice versa.
//
// Checkpoint: 7 x int32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
// seq_len; vocab_size < 0 means a separate classifier at the end), then fp32 tensors
// token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis_real,
// freq_cis_imag [, wcls]. Each weight matrix is stored [out][in], which is ggml's
// dims {in, out}: the bytes are copied unchanged (Q/K need no permutation for GGUF llama).
// Tokenizer: int32 max_token_length, then per token f32 score, int32 length, bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/gguf_writer.h"

namespace tally::io {

struct Llama2cConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;  // always positive here; see shared_classifier
  int32_t seq_len = 0;
  bool shared_classifier = true;  // false: the file ends with its own wcls [vocab][dim]

  int32_t head_size() const { return dim / n_heads; }
  int32_t kv_dim() const { return head_size() * n_kv_heads; }
};

// Reads and checks the header: every field positive, heads dividing dim, kv heads dividing
// heads, and the file size exactly what the layout needs (overflow-checked).
Result<Llama2cConfig> llama2c_read_config(std::span<const uint8_t> checkpoint, std::string_view name);

// The vocabulary as GGUF stores it: SentencePiece pieces (' ' back to U+2581, ids 1/2 without
// the newlines llama2.c's exporter wraps them in), scores, and token types
// (1 normal, 2 unknown, 3 control, 6 byte).
struct Llama2cVocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
};
Result<Llama2cVocab> llama2c_read_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size,
                                            std::string_view name);

struct Llama2cConvertOptions {
  std::string checkpoint_path;
  std::string tokenizer_path;
  std::string output_path;
  std::string model_name = "llama";  // general.name (what llama.cpp's converter writes)
};

// Fills `out` with the llama metadata, the tokenizer arrays and the tensors.
Status llama2c_to_gguf(std::span<const uint8_t> checkpoint, std::span<const uint8_t> tokenizer,
                       const Llama2cConvertOptions& options, GgufWriter& out);

// Reads options.checkpoint_path and options.tokenizer_path, writes options.output_path.
Status convert_llama2c(const Llama2cConvertOptions& options);

}  // namespace tally::io
