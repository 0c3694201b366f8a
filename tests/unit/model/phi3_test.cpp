// phi3 path (q/k/v rows fused in attn_qkv, gate and up rows fused in ffn_up, NeoX rope) on a
// tiny random model, against the independent reference forward; the fused matrices are bound as
// row views (or repacked per part), so the forward pass is llama's.
#include <gtest/gtest.h>

#include "arch_check.h"
#include <cmath>

#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

TinySpec phi3_spec() {
  TinySpec s;
  s.arch = "phi3";
  s.fused = true;
  s.n_embd = 48;
  s.n_heads = 6;
  s.n_kv_heads = 2;
  s.head_dim = 8;
  s.n_ff = 72;
  s.seed = 13;
  return s;
}

RefSpec phi3_ref() {
  RefSpec r{48, 72, 2, 6, 2, 8, 40, 1e-5f, 10000.0f, /*neox=*/true, /*biases=*/false, /*tied=*/false};
  r.fused = true;
  return r;
}

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

TEST(Phi3, MatchesReferenceWithFusedQkvAndGateUp) {
  const LoadedTinyModel tiny = load_tiny_model(phi3_spec());
  ASSERT_TRUE(tiny.model);
  EXPECT_EQ(tiny.model->weights().layers[0].wk.data - tiny.model->weights().layers[0].wq.data,
            48 * 48 * static_cast<int64_t>(sizeof(float)));  // views into the one tensor
  expect_matches_reference(*tiny.model, phi3_ref(), kTokens);
}

TEST(Phi3, GreedyOutputIsBatchChunkAndThreadInvariant) {
  const LoadedTinyModel tiny = load_tiny_model(phi3_spec());
  ASSERT_TRUE(tiny.model);
  expect_batch_and_thread_invariant(*tiny.model, kTokens);
}

// Q8_0 matrices are repacked by the CPU backend part by part: the parts keep their rows. (q8
// activations make the logits differ from the reference's in the 2nd-3rd digit; rows in the
// wrong part would differ entirely.)
TEST(Phi3, RepackedFusedPartsMatchTheReference) {
  TinySpec s = phi3_spec();
  s.matrix_type = tally::DType::kQ8_0;
  s.n_embd = 64;  // rows of whole q8_0 blocks
  s.n_heads = 8;
  s.n_ff = 96;
  const LoadedTinyModel tiny = load_tiny_model(s);
  ASSERT_TRUE(tiny.model);
  ASSERT_FALSE(tiny.model->weights().repacked.empty());
  RefSpec r = phi3_ref();
  r.dim = 64;
  r.heads = 8;
  r.hidden = 96;
  ModelRunner runner(*tiny.model, 4, 2, 1, 8, 0);
  const std::vector<int32_t> tokens(kTokens.begin(), kTokens.begin() + 8);
  const auto logits = runner.step({{0, 0, tokens}});
  RefModel ref(tiny.model->gguf(), r, 8);
  for (int pos = 0; pos < 8; ++pos) {
    const auto want = ref.step(tokens[pos], pos);
    for (int i = 0; i < 40; ++i) ASSERT_NEAR(logits[pos * 40 + i], want[i], 0.05 * (1 + std::fabs(want[i]))) << pos;
  }
}

TEST(Phi3, UnfusedGateUpIsAClearError) {
  TinySpec s = phi3_spec();
  s.fused = false;  // ffn_up of n_ff rows and a separate ffn_gate
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(make_tiny_gguf(s))).value());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("blk.0.ffn_up.weight"), std::string::npos) << model.status().to_string();
}

}  // namespace
}  // namespace tally_test
