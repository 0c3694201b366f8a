// stories260K (llama2.c's model, llama.cpp's GGUF conversion): config, agreement with an
// independent run.c-style forward, run.c's greedy output token for token, and bit-for-bit
// batch invariance of the logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "model/model.h"
#include "model_runner.h"
#include "reference_model.h"
#include "support/test_data.h"

namespace tally_test {
namespace {

using tally::Model;

constexpr int64_t kVocab = 512;

std::unique_ptr<Model> load_stories(const std::string& path) {
  auto m = Model::load(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

#define LOAD_STORIES(model)                                                        \
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", stories_path_);      \
  auto model = load_stories(stories_path_);                                        \
  ASSERT_NE(model, nullptr)

// prompt_ids and sampled_ids of a reference run (../shared/models/reference/*.ids.txt).
struct RefRun {
  std::vector<int32_t> prompt, sampled;
};
RefRun read_ids(const std::string& path) {
  RefRun r;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    std::vector<int32_t>* out = key == "prompt_ids:" ? &r.prompt : key == "sampled_ids:" ? &r.sampled : nullptr;
    for (int32_t id; out && ls >> id;) out->push_back(id);
  }
  return r;
}

// Tokens of a fixed story prefix (run.c's greedy continuation of "Once upon a time").
std::vector<int32_t> story_tokens(int n) {
  static const int32_t kIds[] = {1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317,
                                 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322, 265, 282, 295,
                                 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426};
  return {kIds, kIds + n};
}

TEST(Stories260K, Config) {
  LOAD_STORIES(model);
  const auto& c = model->config();
  EXPECT_EQ(c.arch->name, "llama");
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.n_vocab, kVocab);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.context_length, 2048);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(c.arch->rope_layout, tally::RopeLayout::kAdjacent);
  EXPECT_EQ(model->weights().owned_bytes, 0);  // all f32: nothing copied
}

TEST(Stories260K, MatchesReferenceForward) {
  LOAD_STORIES(model);
  const auto tokens = story_tokens(40);
  ModelRunner runner(*model, 16, 2, 1, 64, 7);
  const auto logits = runner.step({{0, 0, tokens}});
  RefModel ref(model->gguf(), {64, 172, 5, 8, 4, 8, kVocab, 1e-5f, 10000.0f, false, false, false}, 64);
  for (int pos = 0; pos < 40; ++pos) {
    const auto want = ref.step(tokens[pos], pos);
    const float* got = logits.data() + pos * kVocab;
    for (int64_t i = 0; i < kVocab; ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "pos " << pos << " logit " << i;
    EXPECT_EQ(argmax(got, kVocab), argmax(want.data(), kVocab)) << pos;
  }
}

// run.c's greedy loop: feed the prompt, then the argmax, until 256 positions or BOS.
TEST(Stories260K, GreedyMatchesRunC) {
  LOAD_STORIES(model);
  for (const char* name : {"once_upon_a_time", "lily_and_tom", "empty", "the_cat_sat_on_the_mat",
                           "one_day_a_little_girl_named"}) {
    TALLY_REQUIRE_SHARED(std::string("models/reference/stories260K_greedy_") + name + ".ids.txt", ids_path);
    const RefRun want = read_ids(ids_path);
    ASSERT_FALSE(want.prompt.empty());
    ModelRunner runner(*model, 16, 1, 1, 256, 3);
    const int32_t n_prompt = static_cast<int32_t>(want.prompt.size());
    auto logits = runner.step({{0, 0, want.prompt}});
    std::vector<int32_t> got;
    int32_t next = argmax(logits.data() + (n_prompt - 1) * kVocab, kVocab);
    for (int32_t pos = n_prompt; got.size() < want.sampled.size(); ++pos) {
      got.push_back(next);
      if (next == 1 || pos >= 256) break;
      logits = runner.step({{0, pos, {next}}});
      next = argmax(logits.data(), kVocab);
    }
    EXPECT_EQ(got, want.sampled) << name;
  }
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
}

// (a) One prefill of N tokens gives the same logits as N single-token decode steps.
TEST(Stories260K, PrefillEqualsTokenByTokenDecode) {
  LOAD_STORIES(model);
  const auto tokens = story_tokens(45);
  ModelRunner prefill(*model, 16, 2, 1, 64, 5);
  const auto all = prefill.step({{0, 0, tokens}});
  ModelRunner decode(*model, 16, 1, 1, 64, 9);
  std::vector<float> stepwise;
  for (int32_t pos = 0; pos < 45; ++pos) {
    const auto l = decode.step({{0, pos, {tokens[pos]}}});
    stepwise.insert(stepwise.end(), l.begin(), l.end());
  }
  expect_same_bits(all, stepwise, "prefill vs decode");
  // Chunked prefill (7 + 20 + 18) too.
  ModelRunner chunked(*model, 16, 1, 1, 64, 11);
  std::vector<float> parts;
  for (auto [start, len] : {std::pair{0, 7}, {7, 20}, {27, 18}}) {
    const auto l = chunked.step({{0, start, {tokens.begin() + start, tokens.begin() + start + len}}});
    parts.insert(parts.end(), l.begin(), l.end());
  }
  expect_same_bits(all, parts, "prefill vs chunked prefill");
}

// (b) A sequence alone vs in ragged batches with two other sequences of different lengths,
// with shuffled non-contiguous block tables.
TEST(Stories260K, SequenceAloneEqualsRaggedBatch) {
  LOAD_STORIES(model);
  const auto a = story_tokens(40);
  const std::vector<int32_t> b = {1, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311};
  const std::vector<int32_t> c = {1, 450, 20, 33, 91, 402, 17};
  ModelRunner alone(*model, 4, 1, 1, 64, 0);
  const auto want = alone.step({{0, 0, a}});

  ModelRunner mixed(*model, 4, 2, 3, 64, 21);
  // Step 1: b's whole prompt, the first 15 tokens of a, c's first 3.
  const auto s1 = mixed.step({{1, 0, b}, {0, 0, {a.begin(), a.begin() + 15}}, {2, 0, {c.begin(), c.begin() + 3}}});
  // Step 2: c decodes, a continues with 20 tokens, b decodes.
  const auto s2 = mixed.step({{2, 3, {c[3]}}, {0, 15, {a.begin() + 15, a.begin() + 35}}, {1, 13, {42}}});
  // Step 3: a's last 5 tokens alone.
  const auto s3 = mixed.step({{0, 35, {a.begin() + 35, a.end()}}});
  std::vector<float> got(s1.begin() + 13 * kVocab, s1.begin() + 28 * kVocab);
  got.insert(got.end(), s2.begin() + 1 * kVocab, s2.begin() + 21 * kVocab);
  got.insert(got.end(), s3.begin(), s3.end());
  expect_same_bits(want, got, "alone vs ragged");

  // c's and b's logits also match their own solo runs.
  ModelRunner solo_c(*model, 16, 1, 1, 64, 0);
  const auto want_c = solo_c.step({{0, 0, {c.begin(), c.begin() + 4}}});
  expect_same_bits({want_c.begin() + 3 * kVocab, want_c.end()}, {s2.begin(), s2.begin() + kVocab}, "c decode");
}

// (c) Thread counts and (d) block sizes do not change a bit.
TEST(Stories260K, ThreadCountAndBlockSizeInvariance) {
  LOAD_STORIES(model);
  const auto tokens = story_tokens(45);
  ModelRunner base(*model, 16, 1, 1, 64, 0);
  const auto want = base.step({{0, 0, tokens}});
  for (int threads : {2, 3}) {
    ModelRunner r(*model, 16, threads, 1, 64, 13);
    expect_same_bits(want, r.step({{0, 0, tokens}}), "threads " + std::to_string(threads));
  }
  for (int64_t bs : {4, 1, 32}) {
    ModelRunner r(*model, bs, 2, 1, 64, 17);
    expect_same_bits(want, r.step({{0, 0, tokens}}), "block size " + std::to_string(bs));
  }
}

TEST(Stories260K, OnlyRequestedLogitRowsAreComputed) {
  LOAD_STORIES(model);
  const auto tokens = story_tokens(20);
  ModelRunner r(*model, 16, 2, 1, 64, 0);
  const auto all = r.step({{0, 0, tokens}});
  ModelRunner r2(*model, 16, 2, 1, 64, 0);
  tally::Batch batch = r2.make_batch({{0, 0, tokens}});
  const std::vector<int32_t> rows = {19, 4};
  batch.logit_rows = rows;
  std::vector<float> logits;
  ASSERT_TRUE(r2.try_step(batch, logits).ok());
  ASSERT_EQ(logits.size(), 2u * kVocab);
  EXPECT_EQ(0, std::memcmp(logits.data(), all.data() + 19 * kVocab, kVocab * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(logits.data() + kVocab, all.data() + 4 * kVocab, kVocab * sizeof(float)));
}

}  // namespace
}  // namespace tally_test
