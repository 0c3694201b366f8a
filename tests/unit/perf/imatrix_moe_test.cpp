// The importance-matrix collector on a mixture-of-experts model (a tiny qwen3moe: 8 experts,
// top 2): each expert of a 3-D expert tensor gets its own sums and count, as llama-imatrix
// keeps them. A recorder beside the collector sees the same products and keeps, per (tensor,
// layer, expert), the rows the model multiplied; the collector's entries must be those rows'
// squares and counts, every token must reach exactly top-k experts per layer, and the router
// and the experts' gate and up (which take the same rows) must agree.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "io/gguf.h"
#include "model/model.h"
#include "perf/imatrix_collector.h"
#include "perf/perplexity.h"
#include "tiny_model.h"

namespace tally::perf {
namespace {

// Forwards every product to the collector and keeps its own sums of squares and row counts.
class Recorder final : public MatmulObserver {
 public:
  explicit Recorder(MatmulObserver& next) : next_(next) {}
  void observe(const MatmulSite& site, const float* x, int64_t n_rows, int64_t n_cols) override {
    next_.observe(site, x, n_rows, n_cols);
    Seen& s = seen[{site.tensor, site.layer, site.expert}];
    s.sq.resize(static_cast<size_t>(n_cols), 0.0);
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t i = 0; i < n_cols; ++i) s.sq[i] += double{x[r * n_cols + i]} * x[r * n_cols + i];
    s.rows += n_rows;
  }
  struct Seen {
    std::vector<double> sq;
    int64_t rows = 0;
  };
  std::map<std::tuple<io::GgufTensor, int32_t, int32_t>, Seen> seen;

 private:
  MatmulObserver& next_;
};

TEST(ImatrixMoe, EachExpertGetsItsOwnRowsAndCount) {
  tally_test::TinySpec s;
  s.arch = "qwen3moe";
  s.qk_norm = true;
  s.freq_base = 1000000.0f;
  s.eps = 1e-6f;
  s.n_embd = 48;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.n_ff = 96;
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.n_ff_exp = 16;
  s.seed = 21;
  const std::vector<uint8_t> bytes = tally_test::make_tiny_gguf(s);
  auto gguf = io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto model = Model::from_gguf(std::move(gguf).value());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();

  constexpr int kCtx = 16, kChunks = 3;
  std::vector<int32_t> tokens;
  for (int i = 0; i < kCtx * kChunks; ++i) tokens.push_back(static_cast<int32_t>((i * 7 + 3) % c.n_vocab));
  ImatrixCollector collector(**model);
  Recorder recorder(collector);
  PerplexityOptions o;
  o.n_ctx = kCtx;
  o.n_threads = 2;
  o.observer = &recorder;
  ASSERT_TRUE(perplexity(**model, tokens, o).ok());
  const io::Imatrix m = collector.result({"t"}, kChunks, kCtx);
  const double n_tokens = kCtx * kChunks;

  for (int32_t layer = 0; layer < c.n_layers; ++layer) {
    SCOPED_TRACE(layer);
    const std::string blk = "blk." + std::to_string(layer) + ".";
    const io::ImatrixEntry& gate = m.entries.at(blk + "ffn_gate_exps.weight");
    const io::ImatrixEntry& up = m.entries.at(blk + "ffn_up_exps.weight");
    const io::ImatrixEntry& down = m.entries.at(blk + "ffn_down_exps.weight");
    ASSERT_EQ(gate.n_mat, 8);
    ASSERT_EQ(down.n_mat, 8);
    EXPECT_EQ(gate.n_cols, c.n_embd);
    EXPECT_EQ(down.n_cols, 16);  // the experts' width
    EXPECT_EQ(m.entries.at(blk + "ffn_gate_inp.weight").counts[0], n_tokens);  // the router: every token
    EXPECT_EQ(gate.sums, up.sums);  // same rows into gate and up
    double routed = 0;
    int used = 0;
    for (int32_t e = 0; e < 8; ++e) {
      SCOPED_TRACE(e);
      EXPECT_EQ(gate.counts[e], up.counts[e]);
      EXPECT_EQ(gate.counts[e], down.counts[e]);
      routed += gate.counts[e];
      used += gate.counts[e] > 0;
      auto it = recorder.seen.find({io::GgufTensor::kFfnGateExps, layer, e});
      if (it == recorder.seen.end()) {  // no token chose this expert
        EXPECT_EQ(gate.counts[e], 0.0f);
        for (int64_t i = 0; i < gate.n_cols; ++i) EXPECT_EQ(gate.sums[static_cast<size_t>(e * gate.n_cols + i)], 0.0f);
        continue;
      }
      EXPECT_EQ(gate.counts[e], static_cast<float>(it->second.rows));
      for (int64_t i = 0; i < gate.n_cols; ++i)
        EXPECT_FLOAT_EQ(gate.sums[static_cast<size_t>(e * gate.n_cols + i)],
                        static_cast<float>(it->second.sq[i]));
    }
    EXPECT_EQ(routed, n_tokens * 2);  // every token reached exactly its top 2
    EXPECT_GE(used, 3);               // the routing spreads, or the test shows little
  }
}

}  // namespace
}  // namespace tally::perf
