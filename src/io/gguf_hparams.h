// The shape hyper-parameters of a llama-family GGUF (`<arch>.block_count`, ...), under
// llama.cpp's key names, read and range-checked here once for the model loader
// (model/model_config.h) and the planner (plan/gguf_source.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "io/gguf.h"

namespace tally::io {

// Large enough for any real model, small enough that products of two stay far from overflow.
inline constexpr int64_t kMaxHparamDim = int64_t{1} << 24;

struct GgufHparams {
  std::string arch;            // general.architecture, the prefix of the keys below
  int64_t context_length = 0;  // <arch>.context_length
  int64_t n_embd = 0;          // <arch>.embedding_length
  int64_t n_ff = 0;            // <arch>.feed_forward_length
  int64_t n_layers = 0;        // <arch>.block_count
  int64_t n_heads = 0;         // <arch>.attention.head_count
  int64_t n_kv_heads = 0;      // <arch>.attention.head_count_kv, default n_heads
  int64_t head_dim = 0;        // <arch>.attention.key_length, default n_embd / n_heads
  int64_t rope_dim = 0;        // <arch>.rope.dimension_count, default head_dim
  // The sliding window of an arch whose every layer is windowed when the file gives one:
  // llama's <arch>.attention.sliding_window (Mistral 7B v0.1); 0: full attention. (Archs that
  // mix windowed and global layers, gemma2/3, read their window in model/model_config.cpp.)
  int64_t full_window = 0;
};

// The mixture-of-experts keys (llama.cpp's names); n_expert == 0 for a dense model.
struct GgufMoeHparams {
  int64_t n_expert = 0;       // <arch>.expert_count, default 0 (dense)
  int64_t n_expert_used = 0;  // <arch>.expert_used_count (top-k), required when n_expert > 0
  int64_t n_ff_exp = 0;       // <arch>.expert_feed_forward_length, default feed_forward_length
  int64_t n_ff_shexp = 0;     // <arch>.expert_shared_feed_forward_length, default
                              // feed_forward_length (used by archs with a shared expert)
};

// "<arch>.<suffix>".
std::string gguf_arch_key(std::string_view arch, std::string_view suffix);

// `<arch>.<suffix>` as a dimension in [1, kMaxHparamDim]: kNotFound naming the key when it is
// missing (or `fallback` when one is given), kFormat when out of range.
Result<int64_t> gguf_arch_dim(const GgufFile& f, std::string_view arch, std::string_view suffix);
Result<int64_t> gguf_arch_dim_or(const GgufFile& f, std::string_view arch,
                                 std::string_view suffix, int64_t fallback);

// Every field above; errors as gguf_arch_dim's.
Result<GgufHparams> gguf_read_hparams(const GgufFile& f);

// The MoE keys of `f` (n_ff: the file's feed_forward_length, the width defaults): kFormat when
// expert_used_count is missing or outside [1, expert_count] for a file that has experts.
Result<GgufMoeHparams> gguf_read_moe_hparams(const GgufFile& f, std::string_view arch, int64_t n_ff);

// The fields above (arch excepted) into a struct that names them alike (ModelConfig,
// plan::PlanModel).
template <typename Shape>
void gguf_hparams_copy(const GgufHparams& h, Shape& out) {
  out.context_length = h.context_length;
  out.n_embd = h.n_embd;
  out.n_ff = h.n_ff;
  out.n_layers = h.n_layers;
  out.n_heads = h.n_heads;
  out.n_kv_heads = h.n_kv_heads;
  out.head_dim = h.head_dim;
  out.rope_dim = h.rope_dim;
}

}  // namespace tally::io
