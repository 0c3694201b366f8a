#include "arch_cases.h"

namespace tally_test {

namespace {

using nlohmann::json;

// Texts of the directories' 102-token byte-level tokenizer (printable ASCII and its merges
// "ab", "abc", " a"): a short one and one longer than three sliding windows of 5.
const std::vector<std::string> kTinyPrompts = {"abc ab", "The quick brown fox, abc abc! 42"};

// Every matrix dimension a multiple of 32, so that q8_0 quantizes every block matrix (a
// partial block would leave it in f32 and test nothing).
TinySpec base(const std::string& arch, uint32_t seed) {
  TinySpec s;
  s.arch = arch;
  s.n_vocab = 128;  // the tokenizer's 102 tokens, the rest [PADn]
  s.n_embd = 32;
  s.n_ff = 64;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 8;
  s.context_length = 256;
  s.seed = seed;
  return s;
}

ArchCase tiny(const std::string& label, TinySpec spec, json extra_config = json::object()) {
  ArchCase c;
  c.label = label;
  c.spec = std::move(spec);
  c.extra_config = std::move(extra_config);
  c.prompts = kTinyPrompts;
  return c;
}

}  // namespace

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> out;
  out.push_back(tiny("llama", base("llama", 101)));

  // Llama 3.x: 4 query heads per KV head, a 500k rope base, tied embeddings (3.2), and llama3
  // rope scaling (rope_freqs.weight): with head_dim 16 the 8 pairs' wavelengths (6.3 ... 4.4e4)
  // fall on both sides of and inside the 16 ... 64 band of original context 64.
  TinySpec llama3 = base("llama", 102);
  llama3.n_embd = 64;
  llama3.n_heads = 8;
  llama3.head_dim = 16;
  llama3.freq_base = 500000.0f;
  llama3.tied = true;
  out.push_back(tiny("llama3_gqa", llama3,
                     {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                                        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}}));

  TinySpec yarn = base("llama", 103);
  yarn.head_dim = 16;
  yarn.n_heads = 2;
  yarn.n_kv_heads = 1;
  out.push_back(tiny("llama_yarn", yarn,
                     {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0},
                                        {"original_max_position_embeddings", 64}}}}));

  // Mistral-style: every layer attends over a window of 5.
  ArchCase mistral = tiny("mistral_window", base("llama", 104), {{"sliding_window", 5}});
  mistral.llamacpp_ignores_window = 5;
  out.push_back(mistral);

  TinySpec mixtral = base("llama", 105);
  mixtral.n_expert = 4;
  mixtral.n_expert_used = 2;
  out.push_back(tiny("mixtral", mixtral));
  ArchCase split = tiny("mixtral_split_experts", mixtral);
  split.spec.split_experts = true;
  split.direct_gguf = true;
  out.push_back(split);

  TinySpec qwen2 = base("qwen2", 106);
  qwen2.biases = true;
  qwen2.freq_base = 1000000.0f;
  out.push_back(tiny("qwen2", qwen2));
  TinySpec qwen2_yarn = qwen2;
  qwen2_yarn.seed = 107;
  qwen2_yarn.head_dim = 16;
  qwen2_yarn.n_heads = 2;
  qwen2_yarn.n_kv_heads = 1;
  out.push_back(tiny("qwen2_yarn", qwen2_yarn,
                     {{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0},
                                        {"original_max_position_embeddings", 64}}}}));

  // head_dim 16 x 6 heads = 96 wide q, apart from n_embd 64.
  TinySpec qwen3 = base("qwen3", 108);
  qwen3.qk_norm = true;
  qwen3.n_embd = 64;
  qwen3.n_heads = 6;
  qwen3.head_dim = 16;
  qwen3.freq_base = 1000000.0f;
  qwen3.eps = 1e-6f;
  out.push_back(tiny("qwen3", qwen3));

  TinySpec qwen2moe = base("qwen2moe", 109);
  qwen2moe.biases = true;
  qwen2moe.n_expert = 6;
  qwen2moe.n_expert_used = 4;
  qwen2moe.n_ff_exp = 32;
  qwen2moe.n_ff_shexp = 64;
  out.push_back(tiny("qwen2moe", qwen2moe));

  TinySpec qwen3moe = base("qwen3moe", 110);
  qwen3moe.qk_norm = true;
  qwen3moe.n_expert = 8;
  qwen3moe.n_expert_used = 2;
  qwen3moe.n_ff_exp = 32;
  out.push_back(tiny("qwen3moe", qwen3moe));

  // Soft-caps small enough to bend the scores and logits; a window of 5.
  TinySpec gemma2 = base("gemma2", 111);
  gemma2.tied = true;
  gemma2.post_norms = true;
  gemma2.head_dim = 16;
  out.push_back(tiny("gemma2", gemma2,
                     {{"sliding_window", 5}, {"attn_logit_softcapping", 2.0}, {"final_logit_softcapping", 3.0},
                      {"query_pre_attn_scalar", 16}}));

  // Six layers: five local (rope base 1e4) and one global (1e6, linear x8).
  TinySpec gemma3 = base("gemma3", 112);
  gemma3.tied = true;
  gemma3.post_norms = true;
  gemma3.qk_norm = true;
  gemma3.head_dim = 16;
  gemma3.n_layers = 6;
  gemma3.freq_base = 1000000.0f;
  out.push_back(tiny("gemma3", gemma3,
                     {{"sliding_window", 5}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}},
                      {"query_pre_attn_scalar", 16}, {"rope_local_base_freq", 10000.0}}));

  // Phi-3's special tokens: llama.cpp sets their attributes by text when general.name holds
  // "phi3" (llama-vocab.cpp), and a vocabulary without "<unk>", "<s>", "</s>" and
  // "<|endoftext|>" fails to load ("error loading model vocabulary: _Map_base::at").
  json phi3_tokens = json::array();
  int phi3_id = 102;
  for (const char* t : {"<unk>", "<s>", "</s>", "<|endoftext|>"})
    phi3_tokens.push_back({{"id", phi3_id++}, {"content", t}, {"special", true}});
  TinySpec phi3 = base("phi3", 113);
  phi3.fused = true;
  phi3.head_dim = 16;
  phi3.n_heads = 2;
  phi3.n_kv_heads = 2;
  ArchCase phi3_case = tiny("phi3", phi3);
  phi3_case.added_tokens = phi3_tokens;
  out.push_back(phi3_case);
  // LongRoPE of the 128k models with different factors per pair, and a prompt that runs past
  // the original context of 64: the test's context 256 is past it, so both pick the long factors
  // and the attention factor sqrt(1 + ln 4 / ln 64).
  TinySpec phi3_long = phi3;
  phi3_long.seed = 114;
  const json long_f = {1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0};
  const json short_f = {1.0, 1.0, 1.1, 1.2, 1.5, 2.0, 2.5, 3.0};
  const json longrope = {{"type", "longrope"}, {"long_factor", long_f}, {"short_factor", short_f}};
  ArchCase long_case = tiny("phi3_longrope", phi3_long, {{"original_max_position_embeddings", 64}, {"rope_scaling", longrope}});
  long_case.added_tokens = phi3_tokens;
  long_case.prompts.push_back(
      "The quick brown fox jumps over the lazy dog, abc abc! Then 42 cats, 7 ab and a b c; all of it again.");
  out.push_back(long_case);
  // The same model trained to 1024 from 256, run at the test's context 256 = its original
  // context: the short factors, still with the attention factor sqrt(1 + ln 4 / ln 256).
  TinySpec phi3_short = phi3_long;
  phi3_short.seed = 115;
  phi3_short.context_length = 1024;
  ArchCase short_case =
      tiny("phi3_longrope_short", phi3_short, {{"original_max_position_embeddings", kArchContext}, {"rope_scaling", longrope}});
  short_case.added_tokens = phi3_tokens;
  out.push_back(short_case);

  ArchCase stories;
  stories.label = "stories260K";
  stories.model_path = "models/stories260K.gguf";
  stories.prompts = {"Once upon a time", "The little dog"};
  out.push_back(stories);
  return out;
}

}  // namespace tally_test
