// A Hugging Face model directory -> the GGUF that llama.cpp's convert_hf_to_gguf.py would write
// for it: config.json (hf_config.h), the safetensors weights (io/safetensors.h, mapped; tensors
// as hf_tensors.h lays them out), tokenizer.json + tokenizer_config.json (tokenizer_hf.h, as
// tokenizer.ggml.* keys; the chat template as tokenizer.chat_template) and
// generation_config.json (general.sampling.{temp,top_p,top_k}; its eos_token_id when the
// tokenizer config names none). `tally convert --hf` writes it to a file, streaming tensor by
// tensor; `-m DIR` (open_model_file) builds it in memory and loads that.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/hf_config.h"
#include "tensor/dtype.h"

namespace tally {

struct HfConvertSummary {
  HfModelInfo info;
  int64_t n_tensors = 0;
  uint64_t tensor_bytes = 0;
  size_t n_shards = 0;
};

// Whether `path` is a directory (taken as a Hugging Face model directory).
bool is_hf_model_dir(const std::string& path);

// Puts the whole model into `w` (metadata now; tensors as streamed producers that keep the
// checkpoint mapped until `w` is gone). `type`: f32, f16 or bf16 for the matrices; nullopt
// keeps each tensor's own. on_tensor: called after each tensor is produced (progress).
// metadata_only: no tensors (the weights are still mapped and checked).
Result<HfConvertSummary> hf_dir_to_gguf(const std::string& dir, std::optional<DType> type, io::GgufWriter& w,
                                        std::function<void()> on_tensor = {}, bool metadata_only = false);

// A GGUF file path (mapped), or a Hugging Face directory converted in memory: its metadata, and
// its tensors in their own types, bound in place in the mapped safetensors files where the
// bytes are already the GGUF tensor's (f32/f16/bf16 as stored, rows as they are: most
// matrices; experts as per-expert matrices) and copied where they must be transformed (llama's
// q/k rope permutation, Gemma's 1 + w norms, 1-D tensors stored below f32); none with
// metadata_only (for the tokenizer and chat template).
Result<io::GgufFile> open_model_file(const std::string& path, bool metadata_only = false);

}  // namespace tally
