// qwen3 path (per-head q/k RMSNorm before rope, NeoX rope, no biases, head_dim set by
// key_length apart from n_embd / n_heads) on a tiny random model, against the independent
// reference forward.
#include <gtest/gtest.h>

#include <cmath>

#include "arch_check.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

TinySpec qwen3_spec(tally::DType vector_type) {
  TinySpec s;
  s.arch = "qwen3";
  s.qk_norm = true;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.n_embd = 48;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;  // 4 x 16 = 64 != 48: q is wider than the residual stream
  s.n_ff = 80;
  s.vector_type = vector_type;
  s.seed = 7;
  return s;
}

RefSpec qwen3_ref() {
  RefSpec r{48, 80, 2, 4, 2, 16, 40, 1e-6f, 1000000.0f, /*neox=*/true, /*biases=*/false, /*tied=*/false};
  r.qk_norm = true;
  return r;
}

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

TEST(Qwen3, MatchesReferenceWithPerHeadQkNorm) {
  const LoadedTinyModel tiny = load_tiny_model(qwen3_spec(tally::DType::kF32));
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  EXPECT_EQ(model->config().head_dim, 16);
  EXPECT_EQ(model->config().q_dim(), 64);
  EXPECT_TRUE(model->config().arch->qk_norm);
  expect_matches_reference(*model, qwen3_ref(), kTokens);
}

TEST(Qwen3, F16NormsAreConverted) {
  const LoadedTinyModel tiny = load_tiny_model(qwen3_spec(tally::DType::kF16));
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_matches_reference(*model, qwen3_ref(), kTokens);
}

TEST(Qwen3, GreedyOutputIsBatchChunkAndThreadInvariant) {
  const LoadedTinyModel tiny = load_tiny_model(qwen3_spec(tally::DType::kF32));
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  expect_batch_and_thread_invariant(*model, kTokens);
}

// The norms matter: the reference without them is far from tally's logits.
TEST(Qwen3, ReferenceWithoutQkNormDiffers) {
  const LoadedTinyModel tiny = load_tiny_model(qwen3_spec(tally::DType::kF32));
  ASSERT_TRUE(tiny.model);
  const auto& model = tiny.model;
  ModelRunner runner(*model, 4, 1, 1, 16, 0);
  const std::vector<int32_t> tokens = {3, 17, 39, 8};
  const auto logits = runner.step({{0, 0, tokens}});
  RefSpec r = qwen3_ref();
  r.qk_norm = false;
  RefModel ref(model->gguf(), r, 16);
  float max_diff = 0.0f;
  for (int pos = 0; pos < 4; ++pos) {
    const auto want = ref.step(tokens[pos], pos);
    for (int i = 0; i < 40; ++i) max_diff = std::max(max_diff, std::fabs(logits[pos * 40 + i] - want[i]));
  }
  EXPECT_GT(max_diff, 1e-3f);
}

TEST(Qwen3, MissingKNormIsAClearError) {
  TinySpec s = qwen3_spec(tally::DType::kF32);
  s.skip_tensors = {"blk.1.attn_k_norm.weight"};
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(s))).value());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("blk.1.attn_k_norm.weight"), std::string::npos)
      << model.status().to_string();
}

TEST(Qwen3, KNormOfTheWrongSizeIsAClearError) {
  TinySpec s = qwen3_spec(tally::DType::kF32);
  s.skip_tensors = {"blk.0.attn_q_norm.weight"};
  s.extra = [](tally::io::GgufWriter& w) {
    std::vector<float> v(48, 1.0f);  // n_embd values, not head_dim
    const auto st = w.add_tensor("blk.0.attn_q_norm.weight", tally::DType::kF32, {48},
                                 {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)});
    EXPECT_TRUE(st.ok());
  };
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(s))).value());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("attn_q_norm"), std::string::npos) << model.status().to_string();
}

}  // namespace
}  // namespace tally_test
