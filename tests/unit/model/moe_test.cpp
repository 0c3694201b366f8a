// Mixture-of-experts paths (qwen3moe, qwen2moe with its shared expert, Mixtral-style MoE under
// llama) on tiny random models, against the independent reference forward, and the routing on
// its own: top-k with ties, renormalisation, tokens grouped by expert.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "arch_check.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model/moe_routing.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

struct MoeCase {
  TinySpec spec;
  RefSpec ref;
};

// The same experts in the tiny model and in the reference.
void set_experts(MoeCase& c, int n_expert, int n_used, int n_ff_exp, int n_ff_shexp, bool norm) {
  c.spec.n_expert = c.ref.n_expert = n_expert;
  c.spec.n_expert_used = c.ref.n_used = n_used;
  c.spec.n_ff_exp = n_ff_exp;
  c.ref.n_ff_exp = n_ff_exp > 0 ? n_ff_exp : static_cast<int>(c.spec.n_ff);
  c.spec.n_ff_shexp = c.ref.n_ff_shexp = n_ff_shexp;
  c.ref.moe_norm = norm;
}

// qwen3moe: per-head q/k norms, no biases, 8 experts of 16, top 2 renormalised.
MoeCase qwen3moe_case() {
  MoeCase c;
  TinySpec& s = c.spec;
  s.arch = "qwen3moe";
  s.qk_norm = true;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.n_embd = 48;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.n_ff = 96;  // feed_forward_length: unused by an MoE layer
  s.seed = 11;
  c.ref = {48, 96, 2, 4, 2, 16, 40, 1e-6f, 1000000.0f, /*neox=*/true, /*biases=*/false, /*tied=*/false};
  c.ref.qk_norm = true;
  set_experts(c, 8, 2, 16, 0, /*norm=*/true);
  return c;
}

// qwen2moe: q/k/v biases, 6 experts of 12, top 4 not renormalised, a shared expert of 24.
MoeCase qwen2moe_case() {
  MoeCase c;
  TinySpec& s = c.spec;
  s.arch = "qwen2moe";
  s.biases = true;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.n_embd = 32;
  s.n_ff = 40;
  s.seed = 12;
  c.ref = {32, 40, 2, 4, 2, 8, 40, 1e-6f, 1000000.0f, /*neox=*/true, /*biases=*/true, /*tied=*/false};
  set_experts(c, 6, 4, 12, 24, /*norm=*/false);
  return c;
}

// Mixtral-style llama: adjacent rope pairs, 4 experts as wide as feed_forward_length (no
// expert_feed_forward_length key), top 2 renormalised.
MoeCase mixtral_case() {
  MoeCase c;
  TinySpec& s = c.spec;
  s.arch = "llama";
  s.n_ff = 24;
  s.seed = 13;
  c.ref = {32, 24, 2, 4, 2, 8, 40, 1e-5f, 10000.0f, /*neox=*/false, /*biases=*/false, /*tied=*/false};
  set_experts(c, 4, 2, 0, 0, /*norm=*/true);  // no expert_feed_forward_length: n_ff wide
  return c;
}

// The largest difference between tally's logits and a reference's over the first 6 tokens.
float max_diff_from(const tally::Model& model, const RefSpec& ref) {
  return reference_max_diff(model, ref, {kTokens.begin(), kTokens.begin() + 6});
}

TEST(Moe, Qwen3MoeMatchesReference) {
  const MoeCase c = qwen3moe_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  const tally::ModelConfig& config = tiny.model->config();
  EXPECT_EQ(config.n_expert, 8);
  EXPECT_EQ(config.n_expert_used, 2);
  EXPECT_EQ(config.n_ff_exp, 16);
  EXPECT_EQ(config.n_ff_shexp, 0);
  expect_matches_reference(*tiny.model, c.ref, kTokens);
}

TEST(Moe, Qwen2MoeWithSharedExpertMatchesReference) {
  const MoeCase c = qwen2moe_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  EXPECT_EQ(tiny.model->config().n_ff_shexp, 24);
  expect_matches_reference(*tiny.model, c.ref, kTokens);
}

TEST(Moe, MixtralStyleLlamaMatchesReference) {
  const MoeCase c = mixtral_case();
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  EXPECT_EQ(tiny.model->config().n_ff_exp, 24);
  expect_matches_reference(*tiny.model, c.ref, kTokens);
}

TEST(Moe, GreedyOutputIsBatchChunkAndThreadInvariant) {
  for (const MoeCase& c : {qwen3moe_case(), qwen2moe_case(), mixtral_case()}) {
    SCOPED_TRACE(c.spec.arch);
    const LoadedTinyModel tiny = load_tiny_model(c.spec);
    ASSERT_TRUE(tiny.model);
    expect_batch_and_thread_invariant(*tiny.model, kTokens);
  }
}

// Repacked (Q8_0) experts: each expert's slice of the 3-D tensor prepared on its own.
TEST(Moe, QuantizedExpertsAreBatchAndThreadInvariant) {
  MoeCase c = qwen3moe_case();
  c.spec.n_embd = 64;
  c.spec.n_ff_exp = 32;
  c.spec.matrix_type = tally::DType::kQ8_0;
  const LoadedTinyModel tiny = load_tiny_model(c.spec);
  ASSERT_TRUE(tiny.model);
  EXPECT_GT(tiny.model->weights().repacked_bytes, 0);
  expect_batch_and_thread_invariant(*tiny.model, kTokens);
}

// Each routing feature changes the logits: dropping it from the reference moves it away.
TEST(Moe, ReferenceWithoutEachRoutingFeatureDiffers) {
  {
    const MoeCase c = qwen3moe_case();
    const LoadedTinyModel tiny = load_tiny_model(c.spec);
    ASSERT_TRUE(tiny.model);
    EXPECT_LT(max_diff_from(*tiny.model, c.ref), 1e-3f);
    RefSpec r = c.ref;
    r.moe_norm = false;
    EXPECT_GT(max_diff_from(*tiny.model, r), 1e-3f) << "renormalisation";
    r = c.ref;
    r.n_used = 1;
    EXPECT_GT(max_diff_from(*tiny.model, r), 1e-3f) << "top-k";
  }
  {
    const MoeCase c = qwen2moe_case();
    const LoadedTinyModel tiny = load_tiny_model(c.spec);
    ASSERT_TRUE(tiny.model);
    RefSpec r = c.ref;
    r.n_ff_shexp = 0;
    EXPECT_GT(max_diff_from(*tiny.model, r), 1e-3f) << "shared expert";
    r = c.ref;
    r.moe_norm = true;
    EXPECT_GT(max_diff_from(*tiny.model, r), 1e-3f) << "qwen2moe does not renormalise";
  }
}

tally::Status load_status(const TinySpec& s) {
  const std::vector<uint8_t> bytes = make_tiny_gguf(s);  // the parsed file views them
  auto gguf = tally::io::GgufFile::parse(bytes);
  if (!gguf.ok()) return gguf.status();
  auto model = tally::Model::from_gguf(std::move(gguf).value());
  return model.ok() ? tally::Status::ok_status() : model.status();
}

void expect_error_naming(const TinySpec& s, const std::string& what) {
  const tally::Status st = load_status(s);
  ASSERT_FALSE(st.ok()) << what;
  EXPECT_NE(st.message().find(what), std::string::npos) << st.to_string();
}

TEST(Moe, BadFilesAreClearErrors) {
  TinySpec s = qwen3moe_case().spec;
  s.skip_keys = {"expert_count"};
  expect_error_naming(s, "qwen3moe.expert_count");

  s = qwen3moe_case().spec;
  s.skip_keys = {"expert_used_count"};
  expect_error_naming(s, "qwen3moe.expert_used_count");

  s = qwen3moe_case().spec;
  s.n_expert_used = 9;
  expect_error_naming(s, "expert_used_count");

  s = qwen3moe_case().spec;
  s.skip_tensors = {"blk.1.ffn_down_exps.weight"};
  expect_error_naming(s, "blk.1.ffn_down_exps.weight");

  // A 2-D expert tensor where a 3-D one belongs.
  s = qwen3moe_case().spec;
  s.skip_tensors = {"blk.0.ffn_up_exps.weight"};
  s.extra = [](tally::io::GgufWriter& w) {
    std::vector<float> v(48 * 16 * 8, 0.0f);
    const auto st = w.add_tensor("blk.0.ffn_up_exps.weight", tally::DType::kF32, {48, 128},
                                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
    EXPECT_TRUE(st.ok());
  };
  expect_error_naming(s, "blk.0.ffn_up_exps.weight");

  s = qwen2moe_case().spec;
  s.skip_tensors = {"blk.0.ffn_gate_inp_shexp.weight"};
  expect_error_naming(s, "blk.0.ffn_gate_inp_shexp.weight");

  // Experts in an arch whose forward pass has no MoE (here qwen3's keys and tensors).
  s = qwen3moe_case().spec;
  s.arch = "qwen3";
  expect_error_naming(s, "qwen3.expert_count");
}

// Older llama.cpp conversions of Mixtral wrote blk.N.ffn_{gate,up,down}.E.weight per expert:
// the same values loaded from that form give the same logits, bit for bit (f32 views, and q8_0
// repacked per expert), as the merged *_exps form.
TEST(Moe, PerExpertMixtralTensorsMatchTheMergedForm) {
  for (const tally::DType type : {tally::DType::kF32, tally::DType::kQ8_0}) {
    SCOPED_TRACE(tally::dtype_name(type));
    MoeCase c = mixtral_case();
    c.spec.matrix_type = type;
    c.spec.n_embd = 64;  // rows of whole q8_0 blocks
    c.spec.n_ff = 32;
    const LoadedTinyModel merged = load_tiny_model(c.spec);
    c.spec.split_experts = true;
    const LoadedTinyModel split = load_tiny_model(c.spec);
    ASSERT_TRUE(merged.model && split.model);
    ASSERT_EQ(split.model->gguf().find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
    ASSERT_NE(split.model->gguf().find_tensor("blk.1.ffn_down.3.weight"), nullptr);
    ModelRunner a(*merged.model, 4, 2, 1, 20, 0), b(*split.model, 4, 2, 1, 20, 0);
    const auto want = a.step({{0, 0, kTokens}});
    const auto got = b.step({{0, 0, kTokens}});
    ASSERT_EQ(want.size(), got.size());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
  }
  MoeCase c = mixtral_case();
  c.spec.split_experts = true;
  c.spec.skip_tensors = {"blk.1.ffn_up.2.weight"};
  expect_error_naming(c.spec, "blk.1.ffn_up.2.weight");
}

// The routing on its own: 3 tokens over 4 experts, top 2.
TEST(MoeRouting, TopKWithTiesGroupedByExpert) {
  const float logits[] = {
      0.0f, 2.0f, 1.0f, 2.0f,   // token 0: experts 1 and 3 tie at the top: both, 1 first
      5.0f, 0.0f, 0.0f, 0.0f,   // token 1: 0, then 1 (the lowest index of the tied rest)
      0.0f, 0.0f, 3.0f, 1.0f,   // token 2: 2 and 3
  };
  std::vector<int32_t> chosen(6), begin(5), cursor(4), tokens(6);
  std::vector<float> chosen_weight(6), weights(6), probs(4);
  const tally::MoeRouting r{.chosen = chosen.data(),
                            .chosen_weight = chosen_weight.data(),
                            .expert_begin = begin.data(),
                            .cursor = cursor.data(),
                            .probs = probs.data(),
                            .tokens = tokens.data(),
                            .weights = weights.data()};
  tally::moe_route(logits, {3, 4, 2, /*normalize=*/true}, r);
  EXPECT_EQ(chosen, (std::vector<int32_t>{1, 3, 0, 1, 2, 3}));
  EXPECT_EQ(begin, (std::vector<int32_t>{0, 1, 3, 4, 6}));
  EXPECT_EQ(tokens, (std::vector<int32_t>{1, 0, 1, 2, 0, 2}));
  EXPECT_FLOAT_EQ(chosen_weight[0], 0.5f);
  EXPECT_FLOAT_EQ(chosen_weight[0] + chosen_weight[1], 1.0f);
  EXPECT_FLOAT_EQ(chosen_weight[2] + chosen_weight[3], 1.0f);
  EXPECT_GT(chosen_weight[2], 0.99f);
  EXPECT_FLOAT_EQ(weights[1], chosen_weight[0]);  // expert 1's token 0

  tally::moe_route(logits, {3, 4, 2, /*normalize=*/false}, r);
  const double p = std::exp(2.0) / (1 + std::exp(1.0) + 2 * std::exp(2.0));
  EXPECT_NEAR(chosen_weight[0], p, 1e-6);
  EXPECT_NEAR(chosen_weight[1], p, 1e-6);
}

}  // namespace
}  // namespace tally_test
