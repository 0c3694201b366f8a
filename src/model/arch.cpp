#include "model/arch.h"

#include <array>

namespace tally {

namespace {

// Gemma's numbers are llama.cpp's (llama-model.cpp, load_hparams): gemma2's window defaults to
// 4096 and its soft-caps to 50 (attention) and 30 (final logits); gemma3's local layers use rope
// base 10000 without scaling; both use 1/sqrt(n_embd / n_heads) as the query scale for their
// 27B (46 and 62 layers). phi3's sliding window (Phi-3-mini: 2047) is not applied, as llama.cpp
// does not apply it either. MoE routing follows Hugging Face's modeling files (softmax over
// the router logits, top-k, renormalised unless norm_topk_prob is false: Qwen2-MoE) and
// llama.cpp's graphs for the same archs.
constexpr std::array kArchs = {
    ArchTraits{.name = "llama",
               .rope_layout = RopeLayout::kAdjacent,
               .qkv_bias = false,
               .qk_norm = false,
               .moe_optional = true},
    ArchTraits{.name = "qwen2", .rope_layout = RopeLayout::kNeox, .qkv_bias = true, .qk_norm = false},
    ArchTraits{.name = "qwen3", .rope_layout = RopeLayout::kNeox, .qkv_bias = false, .qk_norm = true},
    ArchTraits{.name = "qwen2moe",
               .rope_layout = RopeLayout::kNeox,
               .qkv_bias = true,
               .qk_norm = false,
               .moe_required = true,
               .moe_norm_topk = false,
               .moe_shared_expert = true},
    ArchTraits{.name = "qwen3moe",
               .rope_layout = RopeLayout::kNeox,
               .qkv_bias = false,
               .qk_norm = true,
               .moe_required = true},
    ArchTraits{.name = "phi3",
               .rope_layout = RopeLayout::kNeox,
               .qkv_bias = false,
               .qk_norm = false,
               .fused_projections = true},
    ArchTraits{.name = "gemma2",
               .rope_layout = RopeLayout::kNeox,
               .qkv_bias = false,
               .qk_norm = false,
               .ffn_act = FfnActivation::kGeluTanh,
               .embd_scale = true,
               .post_norms = true,
               .swa_period = 2,
               .default_window = 4096,
               .default_attn_softcap = 50.0f,
               .default_final_softcap = 30.0f,
               .wide_query_scale_layers = 46},
    ArchTraits{.name = "gemma3",
               .rope_layout = RopeLayout::kNeox,
               .qkv_bias = false,
               .qk_norm = true,
               .ffn_act = FfnActivation::kGeluTanh,
               .embd_scale = true,
               .post_norms = true,
               .swa_period = 6,
               .swa_rope_base = 10000.0f,
               .wide_query_scale_layers = 62},
};

}  // namespace

const ArchTraits* find_arch(std::string_view name) {
  for (const auto& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

std::span<const ArchTraits> supported_archs() { return kArchs; }

}  // namespace tally
