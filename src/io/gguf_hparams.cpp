#include "io/gguf_hparams.h"

#include <fmt/format.h>

namespace tally::io {

namespace {

Result<int64_t> check_dim(std::string_view arch, std::string_view suffix, int64_t v) {
  if (v <= 0 || v > kMaxHparamDim)
    return make_error(ErrorCode::kFormat, "key '{}' = {} is out of range [1, {}]",
                      gguf_arch_key(arch, suffix), v, kMaxHparamDim);
  return v;
}

}  // namespace

std::string gguf_arch_key(std::string_view arch, std::string_view suffix) {
  return fmt::format("{}.{}", arch, suffix);
}

Result<int64_t> gguf_arch_dim(const GgufFile& f, std::string_view arch, std::string_view suffix) {
  TALLY_ASSIGN_OR_RETURN(const int64_t v, f.get_int(gguf_arch_key(arch, suffix)));
  return check_dim(arch, suffix, v);
}

Result<int64_t> gguf_arch_dim_or(const GgufFile& f, std::string_view arch,
                                 std::string_view suffix, int64_t fallback) {
  TALLY_ASSIGN_OR_RETURN(const int64_t v, f.get_int_or(gguf_arch_key(arch, suffix), fallback));
  return check_dim(arch, suffix, v);
}

Result<GgufHparams> gguf_read_hparams(const GgufFile& f) {
  GgufHparams h;
  TALLY_ASSIGN_OR_RETURN(const std::string_view arch, f.get_string("general.architecture"));
  h.arch = std::string(arch);
  TALLY_ASSIGN_OR_RETURN(h.context_length, gguf_arch_dim(f, arch, "context_length"));
  TALLY_ASSIGN_OR_RETURN(h.n_embd, gguf_arch_dim(f, arch, "embedding_length"));
  TALLY_ASSIGN_OR_RETURN(h.n_ff, gguf_arch_dim(f, arch, "feed_forward_length"));
  TALLY_ASSIGN_OR_RETURN(h.n_layers, gguf_arch_dim(f, arch, "block_count"));
  TALLY_ASSIGN_OR_RETURN(h.n_heads, gguf_arch_dim(f, arch, "attention.head_count"));
  TALLY_ASSIGN_OR_RETURN(h.n_kv_heads, gguf_arch_dim_or(f, arch, "attention.head_count_kv", h.n_heads));
  TALLY_ASSIGN_OR_RETURN(h.head_dim,
                         gguf_arch_dim_or(f, arch, "attention.key_length", h.n_embd / h.n_heads));
  TALLY_ASSIGN_OR_RETURN(h.rope_dim, gguf_arch_dim_or(f, arch, "rope.dimension_count", h.head_dim));
  if (arch == "llama" && f.find(gguf_arch_key(arch, "attention.sliding_window"))) {
    TALLY_ASSIGN_OR_RETURN(h.full_window, gguf_arch_dim(f, arch, "attention.sliding_window"));
  }
  return h;
}

Result<GgufMoeHparams> gguf_read_moe_hparams(const GgufFile& f, std::string_view arch, int64_t n_ff) {
  GgufMoeHparams m;
  if (!f.find(gguf_arch_key(arch, "expert_count"))) return m;
  TALLY_ASSIGN_OR_RETURN(const int64_t n_expert, f.get_int(gguf_arch_key(arch, "expert_count")));
  if (n_expert == 0) return m;  // llama.cpp writes 0 for dense models of some archs
  TALLY_ASSIGN_OR_RETURN(m.n_expert, check_dim(arch, "expert_count", n_expert));
  if (!f.find(gguf_arch_key(arch, "expert_used_count")))
    return make_error(ErrorCode::kFormat, "key '{}' is required with {} experts",
                      gguf_arch_key(arch, "expert_used_count"), m.n_expert);
  TALLY_ASSIGN_OR_RETURN(m.n_expert_used, gguf_arch_dim(f, arch, "expert_used_count"));
  if (m.n_expert_used > m.n_expert)
    return make_error(ErrorCode::kFormat, "key '{}' = {} is more than the {} experts",
                      gguf_arch_key(arch, "expert_used_count"), m.n_expert_used, m.n_expert);
  TALLY_ASSIGN_OR_RETURN(m.n_ff_exp, gguf_arch_dim_or(f, arch, "expert_feed_forward_length", n_ff));
  TALLY_ASSIGN_OR_RETURN(m.n_ff_shexp, gguf_arch_dim_or(f, arch, "expert_shared_feed_forward_length", n_ff));
  return m;
}

}  // namespace tally::io
