// Paged attention: each ISA path against a double-precision two-pass reference, and bit-for-bit
// invariance of a token's result to the batch around it, the thread count and the block size.
#include "backend/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace tally::cpu {
namespace {

std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (l <= cpu_isa_level()) out.push_back(l);
  return out;
}

struct Shape {
  int64_t n_heads, n_kv_heads, head_dim;
};

// A KV pool holding some sequences, each with a shuffled (non-contiguous) block table. The
// logical content (K/V of each sequence position) comes from a seed, so pools with different
// block sizes hold the same sequences.
class Pool {
 public:
  Pool(const Shape& s, int64_t block_size, const std::vector<int64_t>& seq_lens, uint32_t seed)
      : s_(s), bs_(block_size) {
    int64_t n_blocks = 0;
    for (int64_t len : seq_lens) n_blocks += (len + bs_ - 1) / bs_;
    n_blocks += 3;  // unused blocks stay in the pool
    std::vector<int32_t> order(n_blocks);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t row = s.n_kv_heads * s.head_dim;
    k_.assign(n_blocks * bs_ * row, 1e30f);  // garbage in unused slots must never be read
    v_.assign(n_blocks * bs_ * row, 1e30f);
    size_t next = 0;
    for (size_t q = 0; q < seq_lens.size(); ++q) {
      std::vector<int32_t> table((seq_lens[q] + bs_ - 1) / bs_);
      for (auto& id : table) id = order[next++];
      tables_.push_back(table);
      std::mt19937 content(seed * 31 + static_cast<uint32_t>(q));
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (int64_t p = 0; p < seq_lens[q]; ++p) {
        const int64_t slot = table[p / bs_] * bs_ + p % bs_;
        for (int64_t i = 0; i < row; ++i) k_[slot * row + i] = dist(content) * 2.0f;
        for (int64_t i = 0; i < row; ++i) v_[slot * row + i] = dist(content);
      }
    }
    for (const auto& t : tables_) views_.push_back({t.data(), static_cast<int64_t>(t.size())});
  }
  const float* k_at(int64_t seq, int64_t pos, int64_t kvh) const {
    return k_.data() + slot(seq, pos) * s_.n_kv_heads * s_.head_dim + kvh * s_.head_dim;
  }
  const float* v_at(int64_t seq, int64_t pos, int64_t kvh) const {
    return v_.data() + slot(seq, pos) * s_.n_kv_heads * s_.head_dim + kvh * s_.head_dim;
  }
  PagedKvLayer layer() const { return {k_.data(), v_.data(), bs_}; }
  const BlockTableView* views() const { return views_.data(); }

 private:
  int64_t slot(int64_t seq, int64_t pos) const { return tables_[seq][pos / bs_] * bs_ + pos % bs_; }
  Shape s_;
  int64_t bs_;
  std::vector<float> k_, v_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<BlockTableView> views_;
};

struct Query {
  std::vector<int32_t> pos, seq;
  std::vector<float> q;  // [n][n_heads][head_dim]
};

Query make_queries(const Shape& s, std::vector<int32_t> seq, std::vector<int32_t> pos, uint32_t seed) {
  Query out{std::move(pos), std::move(seq), {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  out.q.resize(out.pos.size() * s.n_heads * s.head_dim);
  for (auto& x : out.q) x = dist(rng);
  return out;
}

std::vector<float> run(IsaLevel isa, const Shape& s, const Pool& pool, const Query& q, int threads = 1) {
  std::vector<float> out(q.q.size(), -7.0f);
  AttentionArgs a;
  a.n_tokens = static_cast<int64_t>(q.pos.size());
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.head_dim = s.head_dim;
  a.q = q.q.data();
  a.out = out.data();
  a.positions = q.pos.data();
  a.seq_index = q.seq.data();
  a.block_tables = pool.views();
  a.kv = pool.layer();
  if (isa == cpu_isa_level()) {
    ThreadPool tp(threads);
    attention(a, tp);
  } else {
    for (int64_t t = 0; t < a.n_tokens; ++t)
      for (int64_t h = 0; h < s.n_kv_heads; ++h) attention_task(isa, a, t, h);
  }
  return out;
}

// Two-pass softmax in double, one head at a time.
std::vector<double> reference(const Shape& s, const Pool& pool, const Query& q) {
  const int64_t hd = s.head_dim, n_rep = s.n_heads / s.n_kv_heads;
  std::vector<double> out(q.q.size());
  for (size_t t = 0; t < q.pos.size(); ++t)
    for (int64_t h = 0; h < s.n_heads; ++h) {
      const float* qh = q.q.data() + (t * s.n_heads + h) * hd;
      std::vector<double> sc(q.pos[t] + 1);
      for (int64_t p = 0; p <= q.pos[t]; ++p) {
        const float* k = pool.k_at(q.seq[t], p, h / n_rep);
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(qh[i]) * k[i];
        sc[p] = d / std::sqrt(double(hd));
      }
      const double mx = *std::max_element(sc.begin(), sc.end());
      double sum = 0;
      for (auto& x : sc) sum += (x = std::exp(x - mx));
      for (int64_t p = 0; p <= q.pos[t]; ++p) {
        const float* v = pool.v_at(q.seq[t], p, h / n_rep);
        for (int64_t i = 0; i < hd; ++i) out[(t * s.n_heads + h) * hd + i] += sc[p] / sum * v[i];
      }
    }
  return out;
}

const Shape kShapes[] = {
    {8, 4, 8},     // stories260K
    {4, 4, 64},    // multi-head
    {6, 2, 128},   // GQA, 3 per group
    {20, 2, 19},   // GQA groups above kAttentionGroup, odd head_dim
    {3, 1, 33},    // MQA
};

TEST(Attention, EveryPathMatchesReference) {
  for (const Shape& s : kShapes) {
    const Pool pool(s, 16, {150, 5, 70}, 3);
    const Query q = make_queries(s, {0, 0, 0, 1, 2, 2, 0}, {0, 63, 64, 4, 65, 69, 149}, 4);
    const auto want = reference(s, pool, q);
    for (IsaLevel isa : available_isas()) {
      const auto got = run(isa, s, pool, q);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
            << "i=" << i << " head_dim=" << s.head_dim << " isa=" << isa_level_name(isa);
    }
  }
}

// Rows of token t in a result.
std::vector<float> rows_of(const std::vector<float>& all, const Shape& s, size_t t) {
  const size_t n = s.n_heads * s.head_dim;
  return {all.begin() + t * n, all.begin() + (t + 1) * n};
}

TEST(Attention, TokenResultIsIndependentOfBatchThreadsAndBlockSize) {
  for (const Shape& s : kShapes) {
    const Pool pool16(s, 16, {150, 5, 70}, 3);
    const Pool pool4(s, 4, {150, 5, 70}, 3);
    const Pool pool1(s, 1, {150, 5, 70}, 3);
    // Sequence 0 at positions 140..149 (a "prefill" chunk) mixed with other sequences.
    std::vector<int32_t> seq, pos;
    for (int32_t p = 140; p < 150; ++p) {
      seq.push_back(0);
      pos.push_back(p);
    }
    seq.insert(seq.end(), {1, 2, 2});
    pos.insert(pos.end(), {4, 68, 69});
    const Query batch = make_queries(s, seq, pos, 8);
    for (IsaLevel isa : available_isas()) {
      const auto together = run(isa, s, pool16, batch);
      for (size_t t = 0; t < seq.size(); ++t) {
        Query alone{{pos[t]}, {seq[t]}, rows_of(batch.q, s, t)};
        const auto want = rows_of(together, s, t);
        for (const Pool* p : {&pool16, &pool4, &pool1}) {
          const auto got = run(isa, s, *p, alone);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << "token " << t << " isa=" << isa_level_name(isa);
        }
      }
    }
    const auto one = run(cpu_isa_level(), s, pool16, batch, 1);
    for (int threads : {2, 3}) {
      const auto got = run(cpu_isa_level(), s, pool4, batch, threads);
      EXPECT_EQ(0, std::memcmp(got.data(), one.data(), got.size() * sizeof(float))) << threads;
    }
  }
}

TEST(Attention, SinglePositionReturnsItsValue) {
  const Shape s{4, 2, 16};
  const Pool pool(s, 4, {3}, 5);
  const Query q = make_queries(s, {0}, {0}, 6);
  for (IsaLevel isa : available_isas()) {
    const auto got = run(isa, s, pool, q);
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(got[h * 16 + i], pool.v_at(0, 0, h / 2)[i]);
  }
}

}  // namespace
}  // namespace tally::cpu
