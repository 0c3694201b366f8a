// Synthetic models run: Model::load of a tiny synthetic file of each type (llama, qwen2,
// qwen3, gemma3, Llama 3 rope scaling, the MoE archs) and a forward pass over a few tokens give finite, non-constant logits.
// (A folder of its own: it needs the model library, which the quant tests do not link.)
#include <cmath>
#include <cstdio>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "plan/gguf_source.h"
#include "plan/plan.h"
#include "io/gguf_writer.h"
#include "model/model.h"
#include "plan/plan_model.h"
#include "synth/synthetic_model.h"
#include "support/test_data.h"
#include "tiny_vocab.h"

namespace tally {
namespace {

synth::SyntheticModelSpec tiny(const char* arch) {
  plan::PlanModel m;
  m.name = fmt::format("tiny-{}", arch);
  m.architecture = arch;
  m.n_layers = 2;
  m.n_embd = 256;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 64;
  m.n_ff = 512;
  m.n_vocab = 300;
  m.context_length = 256;
  m.tied_embeddings = std::string(arch) == "qwen2";
  m.qkv_bias = m.tied_embeddings;
  synth::SyntheticModelSpec spec;
  spec.shape = *plan::plan_model_finish(m);
  return spec;
}

// tiny(arch) with experts (n_ff_shexp > 0: a shared expert too).
synth::SyntheticModelSpec tiny_moe(const char* arch, int64_t n_expert, int64_t n_used, int64_t n_ff_exp,
                                   int64_t n_ff_shexp = 0) {
  synth::SyntheticModelSpec spec = tiny(arch);
  spec.shape.n_expert = n_expert;
  spec.shape.n_expert_used = n_used;
  spec.shape.n_ff_exp = n_ff_exp;
  spec.shape.n_ff_shexp = n_ff_shexp;
  spec.shape.qkv_bias = std::string(arch) == "qwen2moe";
  spec.shape.qk_norm = std::string(arch) == "qwen3moe";
  spec.head_dim_keys = spec.shape.qk_norm;
  spec.shape = *plan::plan_model_finish(spec.shape);
  return spec;
}

// Logits of the last of `tokens` (one sequence, one step).
std::vector<float> last_logits(const Model& model, const std::vector<int32_t>& tokens) {
  const int64_t block_size = 16;
  auto kv = KvStorage::create(KvStorageShape::for_model(model.config(), 4, block_size));
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  ForwardScratch scratch(model.config(), 16);
  ThreadPool pool(2);
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const std::vector<BatchSequence> seqs = {{table}};
  std::vector<int32_t> positions, seq_index;
  for (size_t i = 0; i < tokens.size(); ++i) {
    positions.push_back(static_cast<int32_t>(i));
    seq_index.push_back(0);
  }
  const std::vector<int32_t> logit_rows = {static_cast<int32_t>(tokens.size()) - 1};
  const Batch batch{tokens, positions, seq_index, seqs, logit_rows};
  std::vector<float> logits(static_cast<size_t>(model.config().n_vocab));
  const Status st = model.forward(batch, *kv, scratch, pool, logits.data());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

std::string written_path(const synth::SyntheticModelSpec& spec, const char* type) {
  return fmt::format("{}/forward_{}_{}.gguf", tally_test::temp_dir(), spec.shape.name, type);
}

void expect_runs(const synth::SyntheticModelSpec& spec, const char* type, bool keep_file = false) {
  SCOPED_TRACE(fmt::format("{} {}", spec.shape.name, type));
  synth::SyntheticOptions o;
  o.spec = spec;
  o.type = type;
  o.seed = 3;
  o.n_threads = 2;
  o.vocab_gguf = write_tiny_vocab("forward_vocab.gguf");
  o.output_path = written_path(spec, type);
  auto written = synth::write_synthetic_model(o);
  ASSERT_TRUE(written.ok()) << written.status().to_string();
  auto model = Model::load(o.output_path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().n_vocab, 300);
  EXPECT_EQ((*model)->config().tied_output, spec.shape.tied_embeddings);
  EXPECT_EQ((*model)->config().has_rope_freqs, spec.llama3_rope.has_value());
  const auto logits = last_logits(**model, {1, 17, 250, 42, 9});
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 1e-4f);  // depends on the token, not a constant
  if (!keep_file) std::remove(o.output_path.c_str());
}

TEST(SyntheticForward, LlamaOfEveryTypeRunsWithFiniteLogits) {
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "iq4_nl",
                           "iq4_xs", "q4_k_m", "q5_k_m"})
    expect_runs(tiny("llama"), type);
}

TEST(SyntheticForward, Qwen2AndLlama3RopeScalingRun) {
  expect_runs(tiny("qwen2"), "q4_k_m");
  synth::SyntheticModelSpec llama3 = tiny("llama");
  llama3.rope_freq_base = 500000.0f;
  llama3.llama3_rope = synth::Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
  llama3.head_dim_keys = true;
  expect_runs(llama3, "q8_0");
}

// qwen3: q/k norm tensors written and bound, head_dim (key_length) wider than n_embd / n_heads.
TEST(SyntheticForward, Qwen3WithQkNormsAndWideHeadsRuns) {
  synth::SyntheticModelSpec qwen3 = tiny("qwen3");
  qwen3.shape.head_dim = 128;
  qwen3.shape.qk_norm = true;
  qwen3.shape = *plan::plan_model_finish(qwen3.shape);
  qwen3.head_dim_keys = true;
  expect_runs(qwen3, "q8_0");
}

// gemma3: post norms, q/k norms, sliding window and linear rope scaling keys written and read.
TEST(SyntheticForward, Gemma3WithWindowAndRopeScalingRuns) {
  synth::SyntheticModelSpec gemma3 = tiny("gemma3");
  gemma3.shape.head_dim = 128;
  gemma3.shape.qk_norm = true;
  gemma3.shape.post_norms = true;
  gemma3.shape.tied_embeddings = true;
  gemma3.shape = *plan::plan_model_finish(gemma3.shape);
  gemma3.head_dim_keys = true;
  gemma3.rope_freq_base = 1000000.0f;
  gemma3.sliding_window = 3;
  gemma3.rope_linear_factor = 8.0f;
  expect_runs(gemma3, "q8_0");
}

// MoE: expert keys and 3-D expert tensors written and read back; the router stays f32 in a
// quantized file (llama.cpp's rule), the experts take the file's type.
TEST(SyntheticForward, MoeArchsRun) {
  expect_runs(tiny_moe("llama", 4, 2, 512), "q4_0");
  expect_runs(tiny_moe("qwen2moe", 6, 2, 128, 256), "q8_0");
  const synth::SyntheticModelSpec qwen3moe = tiny_moe("qwen3moe", 8, 3, 64);
  expect_runs(qwen3moe, "q4_k_m", /*keep_file=*/true);
  auto model = Model::load(written_path(qwen3moe, "q4_k_m"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_expert, 8);
  EXPECT_EQ(c.n_expert_used, 3);
  EXPECT_EQ(c.n_ff_exp, 64);
  EXPECT_EQ((*model)->weights().layers[0].router.type, DType::kF32);
  EXPECT_NE((*model)->weights().layers[0].exp_up[0].type, DType::kF32);
  std::remove(written_path(qwen3moe, "q4_k_m").c_str());
}

// A MoE model's memory: the engine's ledger (weights, step buffers with the MoE scratch, KV)
// is what `tally plan` computes for the same file and budget, and the runner allocated
// exactly the plan's buffers (it checks at creation). f16: no repacked matrices, whose row
// padding (an output of 300 rows) the plan does not model.
TEST(SyntheticForward, MoeLedgerIsThePlans) {
  const synth::SyntheticModelSpec qwen2moe = tiny_moe("qwen2moe", 6, 2, 128, 256);
  expect_runs(qwen2moe, "f16", /*keep_file=*/true);
  const std::string path = written_path(qwen2moe, "f16");
  constexpr int64_t kBudget = int64_t{300} << 20;
  EngineConfig c;
  c.model_path = path;
  c.threads = 1;
  c.memory_budget = kBudget;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto model = plan::plan_model_from_gguf_path(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ(model->n_expert, 6);
  EXPECT_EQ(model->n_ff_shexp, 256);
  plan::PlanOptions o;
  o.budget = kBudget;
  auto p = plan::compute_plan(*model, o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const MemoryLedger& l = (*engine)->ledger();
  EXPECT_EQ(l.weight_bytes_mapped + l.weight_bytes_owned, p->weight_bytes);
  EXPECT_EQ(l.activation_bytes, p->activation_bytes);
  EXPECT_EQ(l.kv_blocks, p->n_blocks);
  bool has_moe_term = false;
  for (const auto& t : p->activation_terms) has_moe_term = has_moe_term || t.name == "moe router logits";
  EXPECT_TRUE(has_moe_term);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tally
