#include "hf_dir_writer.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "io/gguf_tensor_names.h"
#include "io/safetensors_writer.h"

namespace tally_test {

namespace {

using nlohmann::json;
using tally::io::GgufTensor;

bool is_gemma(const TinySpec& s) { return s.arch == "gemma2" || s.arch == "gemma3"; }

// The Hugging Face names of a GGUF tensor (several for a 3-D expert tensor).
std::vector<std::string> hf_names(const TinySpec& s, const std::string& gguf) {
  auto id = tally::io::gguf_tensor_parse(gguf);
  EXPECT_TRUE(id.has_value()) << gguf;
  const std::string b = fmt::format("model.layers.{}.", id->layer);
  const bool mixtral = s.arch == "llama" && s.n_expert > 0;
  auto experts = [&](const char* qwen, const char* mix) {
    std::vector<std::string> out;
    for (int64_t e = 0; e < s.n_expert; ++e)
      out.push_back(mixtral ? fmt::format("{}block_sparse_moe.experts.{}.{}.weight", b, e, mix)
                            : fmt::format("{}mlp.experts.{}.{}.weight", b, e, qwen));
    return out;
  };
  switch (id->tensor) {
    case GgufTensor::kTokenEmbd: return {"model.embed_tokens.weight"};
    case GgufTensor::kOutputNorm: return {"model.norm.weight"};
    case GgufTensor::kOutput: return {"lm_head.weight"};
    case GgufTensor::kAttnNorm: return {b + "input_layernorm.weight"};
    case GgufTensor::kAttnQ: return {b + "self_attn.q_proj.weight"};
    case GgufTensor::kAttnK: return {b + "self_attn.k_proj.weight"};
    case GgufTensor::kAttnV: return {b + "self_attn.v_proj.weight"};
    case GgufTensor::kAttnQBias: return {b + "self_attn.q_proj.bias"};
    case GgufTensor::kAttnKBias: return {b + "self_attn.k_proj.bias"};
    case GgufTensor::kAttnVBias: return {b + "self_attn.v_proj.bias"};
    case GgufTensor::kAttnQNorm: return {b + "self_attn.q_norm.weight"};
    case GgufTensor::kAttnKNorm: return {b + "self_attn.k_norm.weight"};
    case GgufTensor::kAttnOut: return {b + "self_attn.o_proj.weight"};
    case GgufTensor::kAttnQkv: return {b + "self_attn.qkv_proj.weight"};
    case GgufTensor::kAttnPostNorm: return {b + "post_attention_layernorm.weight"};
    case GgufTensor::kFfnNorm:
      return {b + (is_gemma(s) ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight")};
    case GgufTensor::kFfnPostNorm: return {b + "post_feedforward_layernorm.weight"};
    case GgufTensor::kFfnGate: return {b + "mlp.gate_proj.weight"};
    case GgufTensor::kFfnUp: return {b + (s.fused ? "mlp.gate_up_proj.weight" : "mlp.up_proj.weight")};
    case GgufTensor::kFfnDown: return {b + "mlp.down_proj.weight"};
    case GgufTensor::kFfnGateInp: return {b + (mixtral ? "block_sparse_moe.gate.weight" : "mlp.gate.weight")};
    case GgufTensor::kFfnGateExps: return experts("gate_proj", "w1");
    case GgufTensor::kFfnUpExps: return experts("up_proj", "w3");
    case GgufTensor::kFfnDownExps: return experts("down_proj", "w2");
    case GgufTensor::kFfnGateInpShexp: return {b + "mlp.shared_expert_gate.weight"};
    case GgufTensor::kFfnGateShexp: return {b + "mlp.shared_expert.gate_proj.weight"};
    case GgufTensor::kFfnUpShexp: return {b + "mlp.shared_expert.up_proj.weight"};
    case GgufTensor::kFfnDownShexp: return {b + "mlp.shared_expert.down_proj.weight"};
    default: ADD_FAILURE() << "no Hugging Face name for " << gguf; return {};
  }
}

std::string dtype_of(tally::DType t) {
  switch (t) {
    case tally::DType::kF32: return "F32";
    case tally::DType::kF16: return "F16";
    case tally::DType::kBF16: return "BF16";
    default: ADD_FAILURE() << "tiny model tensor of type " << tally::dtype_name(t); return "F32";
  }
}

// A tensor's bytes as Hugging Face stores them.
std::vector<uint8_t> hf_bytes(const TinySpec& s, const tally::io::GgufTensorInfo& t) {
  std::vector<uint8_t> out(t.bytes().begin(), t.bytes().end());
  const auto id = tally::io::gguf_tensor_parse(t.name);
  const bool q = id->tensor == GgufTensor::kAttnQ || id->tensor == GgufTensor::kAttnQBias;
  const bool k = id->tensor == GgufTensor::kAttnK || id->tensor == GgufTensor::kAttnKBias;
  const int64_t esize = tally::dtype_info(t.type).block_bytes;
  if (s.arch == "llama" && (q || k)) {  // GGUF row h*hd + 2j + i was Hugging Face's h*hd + i*hd/2 + j
    const int64_t row = t.dims.size() == 1 ? esize : t.dims[0] * esize;
    const int64_t rows = static_cast<int64_t>(out.size()) / row;
    const int64_t hd = rows / (q ? s.n_heads : s.n_kv_heads);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t h = r / hd, kk = r % hd, i = kk % 2, j = kk / 2;
      std::memcpy(out.data() + (h * hd + i * hd / 2 + j) * row, t.data + r * row, static_cast<size_t>(row));
    }
  }
  if (is_gemma(s) && std::string_view(t.name).ends_with("norm.weight")) {
    EXPECT_EQ(t.type, tally::DType::kF32);
    for (size_t i = 0; i < out.size(); i += 4) {
      float v;
      std::memcpy(&v, out.data() + i, 4);
      v -= 1.0f;  // exact for weights in [0.5, 2]: converting back adds 1 exactly
      std::memcpy(out.data() + i, &v, 4);
    }
  }
  return out;
}

json config_of(const TinySpec& s) {
  json c = {{"architectures", {hf_class_of(s)}},
            {"vocab_size", s.n_vocab},
            {"hidden_size", s.n_embd},
            {"intermediate_size", s.n_ff},
            {"num_hidden_layers", s.n_layers},
            {"num_attention_heads", s.n_heads},
            {"num_key_value_heads", s.n_kv_heads},
            {"head_dim", s.head_dim},
            {"max_position_embeddings", s.context_length},
            {"rope_theta", s.freq_base},
            {"rms_norm_eps", s.eps},
            {"tie_word_embeddings", s.tied},
            {"torch_dtype", "float32"}};
  if (s.arch == "llama") c["attention_bias"] = s.biases;
  if (s.n_expert > 0) {
    c[s.arch == "llama" ? "num_local_experts" : "num_experts"] = s.n_expert;
    c["num_experts_per_tok"] = s.n_expert_used;
    c["moe_intermediate_size"] = s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff;
    if (s.n_ff_shexp > 0) c["shared_expert_intermediate_size"] = s.n_ff_shexp;
    if (s.arch == "qwen2moe") c["norm_topk_prob"] = false;
  }
  return c;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace

std::string hf_class_of(const TinySpec& s) {
  if (s.arch == "llama") return s.n_expert > 0 ? "MixtralForCausalLM" : "LlamaForCausalLM";
  if (s.arch == "qwen2") return "Qwen2ForCausalLM";
  if (s.arch == "qwen3") return "Qwen3ForCausalLM";
  if (s.arch == "qwen2moe") return "Qwen2MoeForCausalLM";
  if (s.arch == "qwen3moe") return "Qwen3MoeForCausalLM";
  if (s.arch == "gemma2") return "Gemma2ForCausalLM";
  if (s.arch == "gemma3") return "Gemma3ForCausalLM";
  if (s.arch == "phi3") return "Phi3ForCausalLM";
  ADD_FAILURE() << "no Hugging Face class for " << s.arch;
  return "";
}

json tiny_tokenizer_json() {
  json vocab = json::object();
  for (int c = '!'; c <= '~'; ++c) vocab[std::string(1, static_cast<char>(c))] = c - '!';
  vocab["\xC4\xA0"] = 94;  // Ġ = space
  vocab["ab"] = 95;
  vocab["abc"] = 96;
  vocab["\xC4\xA0" "a"] = 97;
  vocab["\xC3\x83"] = 100;
  vocab["\xC2\xA9"] = 101;
  const char* regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json pre = {{"type", "Sequence"},
              {"pretokenizers",
               json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}},
                            {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", "ab c", "\xC4\xA0 a"}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre},
          {"added_tokens", json::array({{{"id", 98}, {"content", "<|eot|>"}, {"special", true}},
                                        {{"id", 99}, {"content", "<|bos|>"}, {"special", true}}})}};
}

void write_hf_dir(const TinySpec& spec, const tally::io::GgufFile& gguf, const std::string& dir_name,
                  const HfDirOptions& o) {
  namespace fs = std::filesystem;
  const fs::path dir(dir_name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  json config = config_of(spec);
  config.merge_patch(o.extra_config);
  write_text(dir / "config.json", config.dump(2));

  std::vector<tally::io::SafetensorsWriter> shards(static_cast<size_t>(o.shards));
  json weight_map = json::object();
  size_t n = 0;
  for (const auto& t : gguf.tensors()) {
    const std::vector<std::string> names = hf_names(spec, std::string(t.name));
    const std::vector<uint8_t> bytes = hf_bytes(spec, t);
    std::vector<int64_t> shape(t.dims.rbegin(), t.dims.rend());
    if (names.size() > 1) shape.erase(shape.begin());  // [E, out, in] -> E of [out, in]
    if (names.size() == 1 && names[0].ends_with("shared_expert_gate.weight")) shape = {1, t.dims[0]};
    const size_t part = bytes.size() / names.size();
    for (size_t e = 0; e < names.size(); ++e, ++n) {
      const size_t shard = n % shards.size();
      shards[shard].add(names[e], dtype_of(t.type), shape, {bytes.data() + e * part, part});
      weight_map[names[e]] = fmt::format("model-{:05}-of-{:05}.safetensors", shard + 1, shards.size());
    }
  }
  if (o.shards == 1) {
    ASSERT_TRUE(shards[0].write((dir / "model.safetensors").string()).ok());
  } else {
    for (size_t i = 0; i < shards.size(); ++i)
      ASSERT_TRUE(shards[i].write((dir / fmt::format("model-{:05}-of-{:05}.safetensors", i + 1, shards.size())).string()).ok());
    write_text(dir / "model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2));
  }
  if (o.tokenizer) {
    json tokenizer = tiny_tokenizer_json();
    for (const json& t : o.added_tokens) tokenizer["added_tokens"].push_back(t);
    write_text(dir / "tokenizer.json", tokenizer.dump());
    write_text(dir / "tokenizer_config.json",
               json{{"bos_token", "<|bos|>"}, {"eos_token", "<|eot|>"}, {"add_bos_token", true},
                    {"chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}"}}.dump());
  }
}

}  // namespace tally_test
