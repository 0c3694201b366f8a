#include "io/gguf_tensor_names.h"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "base/check.h"

namespace tally::io {

namespace {

constexpr std::array<std::string_view, 31> kNames = {
    "token_embd.weight",  "output_norm.weight", "output.weight",        "rope_freqs.weight",
    "rope_factors_long.weight", "rope_factors_short.weight",
    "attn_norm.weight",   "attn_q.weight",      "attn_k.weight",        "attn_v.weight",
    "attn_q.bias",        "attn_k.bias",        "attn_v.bias",          "attn_q_norm.weight",
    "attn_k_norm.weight", "attn_output.weight", "post_attention_norm.weight",
    "ffn_norm.weight",    "ffn_gate.weight",    "ffn_up.weight",        "ffn_down.weight",
    "post_ffw_norm.weight", "attn_qkv.weight",
    "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",  "ffn_down_exps.weight",
    "ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight",
};
constexpr auto kFirstPerBlock = static_cast<size_t>(GgufTensor::kAttnNorm);
constexpr std::string_view kBlk = "blk.";

std::optional<GgufTensor> find(std::string_view name, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    if (kNames[i] == name) return static_cast<GgufTensor>(i);
  return std::nullopt;
}

// The merged expert tensors and the stem of their old per-expert form
// ("blk.N.<stem>E.weight"): one table for the name and its parse.
struct ExpertForm {
  GgufTensor merged;
  std::string_view stem;
};
constexpr std::array<ExpertForm, 3> kExpertForms = {{{GgufTensor::kFfnGateExps, "ffn_gate."},
                                                     {GgufTensor::kFfnUpExps, "ffn_up."},
                                                     {GgufTensor::kFfnDownExps, "ffn_down."}}};

// "<n>." at the front of `s`: n (>= 0) and the rest after the dot.
std::optional<int> leading_index(std::string_view& s) {
  int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || n < 0 || end == s.data() + s.size() || *end != '.') return std::nullopt;
  s = s.substr(static_cast<size_t>(end - s.data()) + 1);
  return n;
}

}  // namespace

bool gguf_tensor_per_block(GgufTensor t) { return static_cast<size_t>(t) >= kFirstPerBlock; }

std::string gguf_tensor_name(GgufTensor t, int64_t layer) {
  const std::string_view name = kNames[static_cast<size_t>(t)];
  if (!gguf_tensor_per_block(t)) return std::string(name);
  TALLY_CHECK(layer >= 0, "tensor {} needs a block index", name);
  return fmt::format("{}{}.{}", kBlk, layer, name);
}

std::string gguf_expert_tensor_name(GgufTensor merged, int64_t layer, int64_t expert) {
  const auto* form = std::find_if(kExpertForms.begin(), kExpertForms.end(),
                                  [merged](const ExpertForm& f) { return f.merged == merged; });
  TALLY_CHECK(form != kExpertForms.end(), "tensor {} has no per-expert form",
              kNames[static_cast<size_t>(merged)]);
  TALLY_CHECK(layer >= 0 && expert >= 0, "a per-expert tensor needs a block and an expert index");
  return fmt::format("{}{}.{}{}.weight", kBlk, layer, form->stem, expert);
}

std::optional<GgufTensorId> gguf_tensor_parse(std::string_view name) {
  if (auto t = find(name, 0, kFirstPerBlock)) return GgufTensorId{*t, -1};
  if (!name.starts_with(kBlk)) return std::nullopt;
  std::string_view what = name.substr(kBlk.size());
  const std::optional<int> layer = leading_index(what);
  if (!layer) return std::nullopt;
  if (auto t = find(what, kFirstPerBlock, kNames.size())) return GgufTensorId{*t, *layer};
  return std::nullopt;
}

std::optional<GgufExpertTensorId> gguf_expert_tensor_parse(std::string_view name) {
  if (!name.starts_with(kBlk)) return std::nullopt;
  std::string_view rest = name.substr(kBlk.size());
  const std::optional<int> layer = leading_index(rest);
  if (!layer) return std::nullopt;
  for (const ExpertForm& form : kExpertForms) {
    if (!rest.starts_with(form.stem)) continue;
    std::string_view tail = rest.substr(form.stem.size());
    const std::optional<int> expert = leading_index(tail);
    if (!expert || tail != "weight") return std::nullopt;
    return GgufExpertTensorId{form.merged, *layer, *expert};
  }
  return std::nullopt;
}

}  // namespace tally::io
