// What quantizing the KV cache costs on stories260K: the mean KL divergence of each position's
// next-token distribution, q8_0 / q4_0 KV against an f32 KV cache, teacher-forced over 512
// tokens of a TinyStories-style text (tests/data/text/kv_quality_story.txt) at context 512.
// Scored as llama.cpp's perplexity tool scores a chunk: the second half of the context, where
// each position attends to at least 256 cached ones. The target for q8_0 is 0.002 (seen
// 0.0013). stories260K's heads are 8 values: each is one block with its own scale
// (tensor/kv_types.h); when one block of 32 spanned 4 KV heads, K's largest head set the step
// of all four and q8_0 missed the target (0.0023). q4_0 K still costs much on this model (seen
// 0.53: K has outlier channels); q4_0 V alone costs little.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.h"
#include "model_runner.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using tally::DType;
using tally::KvTypes;

constexpr int64_t kContext = 512;

// KL(p || q) of two logit rows, in double.
double kl_divergence(const float* p_logits, const float* q_logits, int64_t n) {
  const auto log_softmax = [n](const float* x) {
    const double mx = *std::max_element(x, x + n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
    std::vector<double> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] - mx - std::log(sum);
    return out;
  };
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

class Stories260KKvQuality : public ::testing::Test {
 protected:
  void SetUp() override {
    TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
    auto m = tally::Model::load(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto tok = tally::Tokenizer::from_gguf(model_->gguf());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tokens_ = (*tok)->encode(read_file(repo_path("tests/data/text/kv_quality_story.txt")), true, false);
    ASSERT_GE(static_cast<int64_t>(tokens_.size()), kContext);
    tokens_.resize(kContext);
  }
  std::vector<float> logits(KvTypes types) {
    ModelRunner runner(*model_, 16, 2, 1, kContext, 3, kContext, types);
    return runner.step({{0, 0, tokens_}});
  }
  // Mean KLD against the f32 cache over the second half, and how often the top token agrees.
  std::pair<double, double> kld_and_same_top(const std::vector<float>& base, KvTypes types) {
    const int64_t n_vocab = model_->config().n_vocab;
    const std::vector<float> got = logits(types);
    double kl = 0, same = 0;
    for (int64_t t = kContext / 2; t < kContext; ++t) {
      const float* p = base.data() + t * n_vocab;
      const float* q = got.data() + t * n_vocab;
      kl += kl_divergence(p, q, n_vocab);
      same += std::max_element(p, p + n_vocab) - p == std::max_element(q, q + n_vocab) - q;
    }
    return {kl / (kContext / 2), same / (kContext / 2)};
  }
  std::unique_ptr<tally::Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(Stories260KKvQuality, QuantizedKvKldAgainstF32) {
  const std::vector<float> base = logits(DType::kF32);
  const KvTypes types[] = {DType::kF16, DType::kQ8_0, DType::kQ4_0, {DType::kQ8_0, DType::kF16},
                           {DType::kF16, DType::kQ4_0}};
  std::vector<double> kld;
  for (KvTypes t : types) {
    const auto [kl, same] = kld_and_same_top(base, t);
    kld.push_back(kl);
    // The figures docs/quantization.md quotes ("KV cache types").
    std::printf("KV %-10s mean KLD vs f32 %.6f  same top token %.2f%%\n",
                tally::kv_types_name(t).c_str(), kl, 100 * same);
    if (t.k != DType::kQ4_0) {
      EXPECT_GT(same, 0.95) << tally::kv_types_name(t);
    }
  }
  EXPECT_LT(kld[0], 1e-4) << "f16 KV";
  EXPECT_LT(kld[0], kld[1]);  // f16 < q8_0 < q4_0: the cache really is quantized
  EXPECT_LT(kld[1], kld[2]);
  EXPECT_LE(kld[1], 0.002) << "q8_0 KV";  // issue 13's target
  EXPECT_LE(kld[3], 0.002) << "q8_0 K, f16 V";
  EXPECT_LE(kld[4], 0.0025) << "f16 K, q4_0 V";
}

}  // namespace
}  // namespace tally_test
