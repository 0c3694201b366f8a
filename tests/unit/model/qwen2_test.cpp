// qwen2 path (q/k/v biases, NeoX rope pairs, tied output, large rope base) on a tiny random
// model, against the independent reference forward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "reference_model.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

struct Case {
  TinySpec spec;
  RefSpec ref;
};

Case qwen2_case(tally::DType vector_type) {
  Case c;
  c.spec.arch = "qwen2";
  c.spec.biases = true;
  c.spec.tied = true;
  c.spec.freq_base = 1000000.0f;
  c.spec.eps = 1e-6f;
  c.spec.n_heads = 6;
  c.spec.n_kv_heads = 2;
  c.spec.head_dim = 16;
  c.spec.n_embd = 48;
  c.spec.n_ff = 72;
  c.spec.vector_type = vector_type;
  c.spec.seed = 5;
  const auto& s = c.spec;
  c.ref = {48, 72, 2, 6, 2, 16, 40, 1e-6f, 1000000.0f, /*neox=*/true, /*biases=*/true, /*tied=*/true};
  (void)s;
  return c;
}

void check_against_reference(const Case& c) {
  const auto bytes = make_tiny_gguf(c.spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto loaded = tally::Model::from_gguf(std::move(gguf).value());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const tally::Model& model = **loaded;
  EXPECT_EQ(model.config().arch->rope_layout, tally::RopeLayout::kNeox);
  EXPECT_TRUE(model.config().tied_output);

  const std::vector<int32_t> tokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};
  const int n = static_cast<int>(tokens.size());
  ModelRunner runner(model, 4, 2, 1, 32, 19);
  const auto logits = runner.step({{0, 0, tokens}});
  RefModel ref(model.gguf(), c.ref, 32);
  for (int pos = 0; pos < n; ++pos) {
    const auto want = ref.step(tokens[pos], pos);
    for (int i = 0; i < 40; ++i)
      ASSERT_NEAR(logits[pos * 40 + i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "pos " << pos << " i " << i;
  }
  // The same tokens one at a time give the same bits.
  ModelRunner decode(model, 8, 1, 1, 32, 23);
  for (int pos = 0; pos < n; ++pos) {
    const auto l = decode.step({{0, pos, {tokens[pos]}}});
    ASSERT_EQ(0, std::memcmp(l.data(), logits.data() + pos * 40, 40 * sizeof(float))) << pos;
  }
}

TEST(Qwen2, MatchesReferenceWithBiasesAndNeoxRope) { check_against_reference(qwen2_case(tally::DType::kF32)); }

TEST(Qwen2, F16VectorsAreConverted) { check_against_reference(qwen2_case(tally::DType::kF16)); }

// The layout flag matters: the same weights read as llama (adjacent pairs, no biases) differ.
TEST(Qwen2, LlamaRopeLayoutGivesDifferentLogits) {
  Case c = qwen2_case(tally::DType::kF32);
  const auto bytes = make_tiny_gguf(c.spec);
  auto model = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes)).value());
  ASSERT_TRUE(model.ok());
  ModelRunner runner(**model, 4, 1, 1, 16, 0);
  const auto logits = runner.step({{0, 0, {3, 17, 39, 8}}});
  c.ref.neox = false;
  RefModel ref((*model)->gguf(), c.ref, 16);
  float max_diff = 0.0f;
  for (int pos = 0; pos < 4; ++pos) {
    const auto want = ref.step(std::vector<int32_t>{3, 17, 39, 8}[pos], pos);
    for (int i = 0; i < 40; ++i) max_diff = std::max(max_diff, std::fabs(logits[pos * 40 + i] - want[i]));
  }
  EXPECT_GT(max_diff, 1e-3f);
}

}  // namespace
}  // namespace tally_test
