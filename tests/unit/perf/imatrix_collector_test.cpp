// The importance-matrix collector on stories260K: every matrix of every layer gets an entry
// with one count per token, products that share an input agree, collecting changes no logit,
// and the sums are the same bits for any thread count.
#include "perf/imatrix_collector.h"

#include <gtest/gtest.h>

#include "perf/perplexity.h"
#include "support/test_data.h"

namespace tally::perf {
namespace {

class ImatrixCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    for (int i = 0; i < 2 * kCtx; ++i) tokens_.push_back(static_cast<int32_t>((i * 37 + 11) % model_->config().n_vocab));
  }
  struct Run {
    io::Imatrix m;
    double ppl = 0;
  };
  Run collect(int threads, bool observe = true) {
    ImatrixCollector c(*model_);
    PerplexityOptions o;
    o.n_ctx = kCtx;
    o.n_threads = threads;
    if (observe) o.observer = &c;
    auto r = perplexity(*model_, tokens_, o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return {c.result({"t"}, 2, kCtx), r.ok() ? r->ppl : 0.0};
  }
  static constexpr int kCtx = 32;
  std::unique_ptr<Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(ImatrixCollectorTest, EveryMatrixCountsEveryToken) {
  const Run r = collect(2);
  const ModelConfig& c = model_->config();
  EXPECT_EQ(r.m.entries.size(), static_cast<size_t>(7 * c.n_layers));  // q k v o gate up down; output left out
  for (const auto& [name, e] : r.m.entries) {
    ASSERT_EQ(e.counts.size(), 1u) << name;
    EXPECT_EQ(e.counts[0], 2.0f * kCtx) << name;
    for (float s : e.sums) EXPECT_GT(s, 0.0f) << name;
  }
  const auto& q = r.m.entries.at("blk.0.attn_q.weight");
  EXPECT_EQ(q.n_cols, c.n_embd);
  EXPECT_EQ(q.sums, r.m.entries.at("blk.0.attn_v.weight").sums);
  EXPECT_EQ(r.m.entries.at("blk.1.ffn_gate.weight").sums, r.m.entries.at("blk.1.ffn_up.weight").sums);
  EXPECT_EQ(r.m.entries.at("blk.1.ffn_down.weight").n_cols, c.n_ff);
}

TEST_F(ImatrixCollectorTest, CollectingChangesNothingAndIgnoresThreads) {
  const Run a = collect(1), b = collect(2), plain = collect(2, false);
  EXPECT_EQ(a.ppl, plain.ppl);
  EXPECT_EQ(a.ppl, b.ppl);
  ASSERT_EQ(a.m.entries.size(), b.m.entries.size());
  for (const auto& [name, e] : a.m.entries) EXPECT_EQ(e.sums, b.m.entries.at(name).sums) << name;
}

}  // namespace
}  // namespace tally::perf
