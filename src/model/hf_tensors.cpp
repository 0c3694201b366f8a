#include "model/hf_tensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/gguf_tensor_names.h"
#include "tensor/half.h"

namespace tally {

namespace {

using io::GgufTensor;

float load(DType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return f16_to_f32(h);
    }
    default: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_f32(h);
    }
  }
}

void store(DType t, uint8_t* p, int64_t i, float v) {
  if (t == DType::kF32) {
    std::memcpy(p + 4 * i, &v, 4);
  } else {
    const uint16_t h = t == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

// v rounded to t (Gemma's 1 + w is computed in the checkpoint's precision, as torch does).
float round_to(DType t, float v) {
  if (t == DType::kF16) return f16_to_f32(f32_to_f16(v));
  if (t == DType::kBF16) return bf16_to_f32(f32_to_bf16(v));
  return v;
}

int64_t elem_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }

// Rows of one "row" unit: a 1-D tensor permuted as rope rows is a column of single values.
int64_t unit_len(const HfTensorPlan& p) {
  return p.dims.size() == 1 && p.order == HfRowOrder::kRopePermute ? 1 : p.row_len();
}

struct Planner {
  const HfModelInfo& info;
  const io::SafetensorsCheckpoint& ckpt;
  std::optional<DType> type;
  std::set<std::string_view> used;
  std::vector<HfTensorPlan> out;

  Result<const io::SafetensorsTensor*> source(const std::string& hf, const std::string& gguf) {
    const io::SafetensorsTensor* t = ckpt.find(hf);
    if (t == nullptr)
      return make_error(ErrorCode::kNotFound, "checkpoint: tensor '{}' not found (it makes {})", hf, gguf);
    if (!t->type)
      return make_error(ErrorCode::kUnsupported, "checkpoint: tensor '{}' has dtype {} (expected F32, F16 or BF16)",
                        hf, t->dtype);
    if (t->shape.empty() || t->shape.size() > 2 || t->n_elements() == 0)
      return make_error(ErrorCode::kFormat, "checkpoint: tensor '{}' has shape [{}] (expected 1 or 2 dims)", hf,
                        fmt::join(t->shape, ", "));
    used.insert(t->name);
    return t;
  }

  // One GGUF tensor from the HF tensors `hf` stacked (experts: a third ggml dim).
  Status add(std::string gguf, const std::vector<std::string>& hf, HfRowOrder order = HfRowOrder::kAsIs,
             int64_t heads = 0, bool squeeze = false) {
    HfTensorPlan p;
    for (const std::string& name : hf) {
      TALLY_ASSIGN_OR_RETURN(const io::SafetensorsTensor* t, source(name, gguf));
      if (!p.sources.empty() && (t->shape != p.sources[0]->shape || t->type != p.sources[0]->type))
        return make_error(ErrorCode::kFormat, "checkpoint: tensor '{}' has shape [{}] {}, unlike '{}' ([{}] {})",
                          name, fmt::join(t->shape, ", "), t->dtype, p.sources[0]->name,
                          fmt::join(p.sources[0]->shape, ", "), p.sources[0]->dtype);
      p.sources.push_back(t);
    }
    const auto& shape = p.sources[0]->shape;
    p.dims.assign(shape.rbegin(), shape.rend());
    if (squeeze) p.dims.resize(1);  // [1, n] -> [n]
    if (hf.size() > 1) p.dims.push_back(static_cast<int64_t>(hf.size()));
    p.order = order;
    p.permute_heads = heads;
    if (order == HfRowOrder::kRopePermute) {
      const int64_t rows = p.dims.size() == 1 ? p.dims[0] : p.dims[1];
      if (heads <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
        return make_error(ErrorCode::kFormat, "checkpoint: tensor '{}' has {} rows, not {} heads of an even size",
                          hf[0], rows, heads);
    }
    const bool is_norm = gguf.ends_with("norm.weight");
    p.plus_one = is_norm && info.norm_plus_one;
    p.force_f32 = p.dims.size() == 1 || is_norm || gguf.find("ffn_gate_inp") != std::string::npos;
    p.type = p.force_f32 ? DType::kF32 : type.value_or(*p.sources[0]->type);
    p.name = std::move(gguf);
    out.push_back(std::move(p));
    return Status::ok_status();
  }

  Status add1(GgufTensor t, int layer, const std::string& hf, HfRowOrder order = HfRowOrder::kAsIs,
              int64_t heads = 0, bool squeeze = false) {
    return add(io::gguf_tensor_name(t, layer), {hf}, order, heads, squeeze);
  }

  Status experts(GgufTensor t, int layer, const std::string& prefix, const std::string& proj) {
    std::vector<std::string> names;
    for (int64_t e = 0; e < info.n_expert; ++e) names.push_back(fmt::format("{}.{}.{}.weight", prefix, e, proj));
    return add(io::gguf_tensor_name(t, layer), names);
  }

  Status block(int l) {
    const std::string b = fmt::format("model.layers.{}.", l);
    const HfRowOrder rope = info.permute_qk ? HfRowOrder::kRopePermute : HfRowOrder::kAsIs;
    TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnNorm, l, b + "input_layernorm.weight"));
    if (info.fused) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnQkv, l, b + "self_attn.qkv_proj.weight"));
    } else {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnQ, l, b + "self_attn.q_proj.weight", rope, info.n_heads));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnK, l, b + "self_attn.k_proj.weight", rope, info.n_kv_heads));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnV, l, b + "self_attn.v_proj.weight"));
    }
    if (info.qkv_bias) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnQBias, l, b + "self_attn.q_proj.bias", rope, info.n_heads));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnKBias, l, b + "self_attn.k_proj.bias", rope, info.n_kv_heads));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnVBias, l, b + "self_attn.v_proj.bias"));
    }
    if (info.qk_norm) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnQNorm, l, b + "self_attn.q_norm.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnKNorm, l, b + "self_attn.k_norm.weight"));
    }
    TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnOut, l, b + "self_attn.o_proj.weight"));
    if (info.gemma_norms) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kAttnPostNorm, l, b + "post_attention_layernorm.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnNorm, l, b + "pre_feedforward_layernorm.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnPostNorm, l, b + "post_feedforward_layernorm.weight"));
    } else {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnNorm, l, b + "post_attention_layernorm.weight"));
    }
    if (info.fused) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnUp, l, b + "mlp.gate_up_proj.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnDown, l, b + "mlp.down_proj.weight"));
    } else if (info.n_expert == 0) {
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnGate, l, b + "mlp.gate_proj.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnUp, l, b + "mlp.up_proj.weight"));
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnDown, l, b + "mlp.down_proj.weight"));
    } else if (info.mixtral_experts) {
      const std::string e = b + "block_sparse_moe.experts";
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnGateInp, l, b + "block_sparse_moe.gate.weight"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnGateExps, l, e, "w1"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnDownExps, l, e, "w2"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnUpExps, l, e, "w3"));
    } else {
      const std::string e = b + "mlp.experts";
      TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnGateInp, l, b + "mlp.gate.weight"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnGateExps, l, e, "gate_proj"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnDownExps, l, e, "down_proj"));
      TALLY_RETURN_IF_ERROR(experts(GgufTensor::kFfnUpExps, l, e, "up_proj"));
      if (info.shared_expert) {
        const std::string s = b + "mlp.shared_expert.";
        TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnGateInpShexp, l, b + "mlp.shared_expert_gate.weight",
                                   HfRowOrder::kAsIs, 0, /*squeeze=*/true));
        TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnGateShexp, l, s + "gate_proj.weight"));
        TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnUpShexp, l, s + "up_proj.weight"));
        TALLY_RETURN_IF_ERROR(add1(GgufTensor::kFfnDownShexp, l, s + "down_proj.weight"));
      }
    }
    return Status::ok_status();
  }
};

}  // namespace

int64_t HfTensorPlan::n_rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

uint64_t HfTensorPlan::n_bytes() const {
  return static_cast<uint64_t>(n_rows() * row_len() * elem_bytes(type));
}

Result<std::vector<HfTensorPlan>> plan_hf_tensors(const HfModelInfo& info, const io::SafetensorsCheckpoint& ckpt,
                                                  std::optional<DType> type) {
  Planner p{info, ckpt, type, {}, {}};
  TALLY_RETURN_IF_ERROR(p.add1(GgufTensor::kTokenEmbd, -1, "model.embed_tokens.weight"));
  for (int l = 0; l < info.n_layers; ++l) TALLY_RETURN_IF_ERROR(p.block(l));
  TALLY_RETURN_IF_ERROR(p.add1(GgufTensor::kOutputNorm, -1, "model.norm.weight"));
  if (const io::SafetensorsTensor* head = ckpt.find("lm_head.weight")) {
    if (info.tied) {
      p.used.insert(head->name);  // a tied checkpoint may still store the copy
    } else {
      TALLY_RETURN_IF_ERROR(p.add1(GgufTensor::kOutput, -1, "lm_head.weight"));
    }
  }
  for (std::string_view name : ckpt.names()) {
    if (p.used.count(name) == 0 && !name.ends_with("rotary_emb.inv_freq"))
      return make_error(ErrorCode::kUnsupported, "checkpoint: tensor '{}' is not part of a {} model as tally maps it",
                        name, info.hf_arch);
  }
  return std::move(p.out);
}

Status produce_hf_tensor(const HfTensorPlan& p, FunctionRef<Status(std::span<const uint8_t>)> emit) {
  const int64_t len = unit_len(p);
  const int64_t n_units = p.n_rows() * p.row_len() / len;
  const int64_t per_source = n_units / static_cast<int64_t>(p.sources.size());
  const DType src_type = *p.sources[0]->type;
  const int64_t in_row = len * elem_bytes(src_type);
  const int64_t out_row = len * elem_bytes(p.type);
  const int64_t head = p.order == HfRowOrder::kRopePermute ? per_source / p.permute_heads : 0;
  const int64_t chunk_units = std::max<int64_t>(1, (int64_t{4} << 20) / out_row);
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(chunk_units, n_units) * out_row));
  int64_t filled = 0;
  for (int64_t u = 0; u < n_units; ++u) {
    const io::SafetensorsTensor& src = *p.sources[static_cast<size_t>(u / per_source)];
    int64_t r = u % per_source;
    if (head > 0) {  // output row 2 j + i of a head comes from Hugging Face's row i * hd/2 + j
      const int64_t h = r / head, k = r % head;
      r = h * head + (k % 2) * (head / 2) + k / 2;
    }
    const uint8_t* in = src.bytes.data() + r * in_row;
    uint8_t* out = buf.data() + filled * out_row;
    if (src_type == p.type && !p.plus_one) {
      std::memcpy(out, in, static_cast<size_t>(in_row));
    } else {
      for (int64_t i = 0; i < len; ++i) {
        float v = load(src_type, in, i);
        if (p.plus_one) v = round_to(src_type, v + 1.0f);
        store(p.type, out, i, v);
      }
    }
    if (++filled == chunk_units || u + 1 == n_units) {
      TALLY_RETURN_IF_ERROR(emit({buf.data(), static_cast<size_t>(filled * out_row)}));
      filled = 0;
    }
  }
  return Status::ok_status();
}

}  // namespace tally
