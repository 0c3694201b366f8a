#include "arch_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "io/gguf.h"
#include "model_runner.h"

namespace tally_test {

namespace {

void expect_same_logit_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
}

}  // namespace

LoadedTinyModel load_tiny_model(const TinySpec& spec) {
  LoadedTinyModel out;
  out.bytes = make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(out.bytes);
  EXPECT_TRUE(gguf.ok()) << gguf.status().to_string();
  if (!gguf.ok()) return out;
  auto model = tally::Model::from_gguf(std::move(gguf).value());
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (model.ok()) out.model = std::move(model).value();
  return out;
}

void expect_matches_reference(const tally::Model& model, const RefSpec& ref, const std::vector<int32_t>& tokens) {
  const int n = static_cast<int>(tokens.size());
  const int64_t vocab = model.config().n_vocab;
  ASSERT_EQ(vocab, ref.vocab);
  ModelRunner runner(model, 4, 2, 1, n, 19);
  const auto logits = runner.step({{0, 0, tokens}});
  RefModel reference(model.gguf(), ref, n);
  for (int pos = 0; pos < n; ++pos) {
    const auto want = reference.step(tokens[pos], pos);
    const float* got = logits.data() + pos * vocab;
    for (int64_t i = 0; i < vocab; ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "pos " << pos << " logit " << i;
    EXPECT_EQ(argmax(got, vocab), argmax(want.data(), vocab)) << "pos " << pos;
  }
}

float reference_max_diff(const tally::Model& model, const RefSpec& ref, const std::vector<int32_t>& tokens) {
  const int n = static_cast<int>(tokens.size());
  const int64_t vocab = model.config().n_vocab;
  ModelRunner runner(model, 4, 1, 1, n, 0);
  const auto logits = runner.step({{0, 0, tokens}});
  RefModel reference(model.gguf(), ref, n);
  float diff = 0.0f;
  for (int pos = 0; pos < n; ++pos) {
    const auto want = reference.step(tokens[pos], pos);
    for (int64_t i = 0; i < vocab; ++i) diff = std::max(diff, std::fabs(logits[pos * vocab + i] - want[i]));
  }
  return diff;
}

void expect_batch_and_thread_invariant(const tally::Model& model, const std::vector<int32_t>& tokens) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  const int64_t vocab = model.config().n_vocab;
  ModelRunner alone(model, 4, 1, 1, 64, 0);
  const auto want = alone.step({{0, 0, tokens}});

  ModelRunner decode(model, 8, 1, 1, 64, 23);
  std::vector<float> stepwise;
  for (int32_t pos = 0; pos < n; ++pos) {
    const auto l = decode.step({{0, pos, {tokens[pos]}}});
    stepwise.insert(stepwise.end(), l.begin(), l.end());
  }
  expect_same_logit_bits(want, stepwise, "prefill vs token-by-token decode");

  const int32_t cut = n / 3;
  ModelRunner chunked(model, 16, 2, 1, 64, 11);
  auto parts = chunked.step({{0, 0, {tokens.begin(), tokens.begin() + cut}}});
  const auto rest = chunked.step({{0, cut, {tokens.begin() + cut, tokens.end()}}});
  parts.insert(parts.end(), rest.begin(), rest.end());
  expect_same_logit_bits(want, parts, "prefill vs chunked prefill");

  // The sequence in ragged batches beside two others, 3 threads, shuffled block tables.
  const std::vector<int32_t> b = {1, 30, 31, 32, 33, 34, 35};
  const std::vector<int32_t> c = {2, 14, 20};
  ModelRunner mixed(model, 4, 3, 3, 64, 21);
  const auto s1 = mixed.step({{1, 0, b}, {0, 0, {tokens.begin(), tokens.begin() + cut}}, {2, 0, c}});
  const auto s2 = mixed.step({{2, 3, {5}}, {0, cut, {tokens.begin() + cut, tokens.end()}}, {1, 7, {9}}});
  std::vector<float> got(s1.begin() + b.size() * vocab, s1.begin() + (b.size() + cut) * vocab);
  got.insert(got.end(), s2.begin() + vocab, s2.begin() + (1 + n - cut) * vocab);
  expect_same_logit_bits(want, got, "alone vs ragged batch on 3 threads");
}

}  // namespace tally_test
