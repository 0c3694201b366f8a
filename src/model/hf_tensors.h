// Which Hugging Face tensors make each GGUF tensor, under llama.cpp's names and layout: dims
// reversed (ggml order), q/k rows of llama permuted from Hugging Face's half-split rope order to
// the adjacent pairs the GGUF (and tally's llama kernels) use, Gemma's norms stored as 1 + w,
// per-expert matrices stacked into the 3-D expert tensors, and 1-D tensors, norms and routers in
// f32 (as the converter writes them). A tensor the model needs and the checkpoint lacks, one of
// the wrong shape or dtype, or a tensor nothing maps is a clear error naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/function_ref.h"
#include "base/status.h"
#include "io/safetensors.h"
#include "model/hf_config.h"
#include "tensor/dtype.h"

namespace tally {

enum class HfRowOrder : uint8_t {
  kAsIs,
  kRopePermute,  // rows of each head: [i * hd/2 + j] -> [2 j + i]
};

struct HfTensorPlan {
  std::string name;                                   // GGUF name
  std::vector<const io::SafetensorsTensor*> sources;  // concatenated by rows (experts)
  std::vector<int64_t> dims;                          // ggml order
  DType type = DType::kF32;                           // written type (f32, f16, bf16)
  HfRowOrder order = HfRowOrder::kAsIs;
  int64_t permute_heads = 0;                          // kRopePermute: heads in the tensor
  bool plus_one = false;                              // Gemma norms
  bool force_f32 = false;                             // 1-D tensors, norms, routers

  int64_t row_len() const { return dims[0]; }
  int64_t n_rows() const;
  uint64_t n_bytes() const;
};

// Every GGUF tensor of the model, in llama.cpp's order (token_embd, blocks, output_norm,
// output). `type`: the written type of matrices; nullopt keeps each tensor's own (f32, f16,
// bf16). rope_freqs.weight (llama3 scaling) is not in the plan: its data is info.rope_freqs.
Result<std::vector<HfTensorPlan>> plan_hf_tensors(const HfModelInfo& info, const io::SafetensorsCheckpoint& ckpt,
                                                  std::optional<DType> type);

// Produces a planned tensor's bytes in chunks of whole rows (about 4 MiB each).
Status produce_hf_tensor(const HfTensorPlan& plan, FunctionRef<Status(std::span<const uint8_t>)> emit);

}  // namespace tally
