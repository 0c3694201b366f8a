// Paged attention over f32, f16, bf16, q8_0 and q4_0 KV (K and V of one type or of two): each
// ISA path against a double-precision two-pass reference, bit-for-bit invariance of a token's
// result to the batch around it, the thread count and the block size, 16-bit and quantized
// caches giving exactly the f32 path's bits on the widened (dequantized) values, and q8_0 /
// q4_0 K scored as int8 dots of the quantized query (attention_int8.h). Heads under 32 values
// of q8_0 / q4_0 are one short block each (tensor/kv_types.h), read by the scalar kernels on
// every ISA path.
#include "backend/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention_int8.h"
#include "backend/cpu/kv_row.h"
#include "tensor/kv_types.h"

namespace tally::cpu {
namespace {

std::vector<IsaLevel> available_isas() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (l <= cpu_isa_level()) out.push_back(l);
  return out;
}

constexpr DType kKvTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};

struct Shape {
  int64_t n_heads, n_kv_heads, head_dim;
};

// Whether a cache of these types can hold rows of this shape (q8_0 / q4_0: heads of whole
// blocks of 32, or of a divisor of 32).
bool shape_fits(const Shape& s, KvTypes types) {
  return kv_types_check_shape(types, s.n_kv_heads, s.head_dim).ok();
}

// A KV pool holding some sequences, each with a shuffled (non-contiguous) block table, stored
// as `types` (K, V). The logical content (K/V of each sequence position) comes from a seed, so pools
// with different block sizes hold the same sequences. Keeps the drawn f32 values and the
// stored values widened back to f32, and can hand out the widened ones as an f32 layer.
class Pool {
 public:
  Pool(const Shape& s, int64_t block_size, const std::vector<int64_t>& seq_lens, uint32_t seed,
       KvTypes types = DType::kF32)
      : s_(s), bs_(block_size), types_(types) {
    int64_t n_blocks = 0;
    for (int64_t len : seq_lens) n_blocks += (len + bs_ - 1) / bs_;
    n_blocks += 3;  // unused blocks stay in the pool
    std::vector<int32_t> order(n_blocks);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t n = n_blocks * bs_ * row();
    drawn_k_.assign(n, 1e30f);  // garbage in unused slots must never be read
    drawn_v_.assign(n, 1e30f);
    size_t next = 0;
    for (size_t q = 0; q < seq_lens.size(); ++q) {
      std::vector<int32_t> table((seq_lens[q] + bs_ - 1) / bs_);
      for (auto& id : table) id = order[next++];
      tables_.push_back(table);
      std::mt19937 content(seed * 31 + static_cast<uint32_t>(q));
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (int64_t p = 0; p < seq_lens[q]; ++p) {
        const int64_t slot = table[p / bs_] * bs_ + p % bs_;
        for (int64_t i = 0; i < row(); ++i) drawn_k_[slot * row() + i] = dist(content) * 2.0f;
        for (int64_t i = 0; i < row(); ++i) drawn_v_[slot * row() + i] = dist(content);
      }
    }
    // Slots are whole heads of whole blocks, so the pool quantizes as one long row of heads.
    const int64_t hd = s_.head_dim;
    k_.resize(kv_row_bytes(types.k, n / hd, hd));
    v_.resize(kv_row_bytes(types.v, n / hd, hd));
    kv_row_store(IsaLevel::kScalar, types.k, drawn_k_.data(), k_.data(), n, hd);
    kv_row_store(IsaLevel::kScalar, types.v, drawn_v_.data(), v_.data(), n, hd);
    wide_k_.resize(n);
    wide_v_.resize(n);
    kv_row_load(types.k, k_.data(), wide_k_.data(), n, hd);
    kv_row_load(types.v, v_.data(), wide_v_.data(), n, hd);
    for (const auto& t : tables_) views_.push_back({t.data(), static_cast<int64_t>(t.size())});
  }
  // Row of (seq, pos, kv head): as drawn (wide = false) or as stored, widened (wide = true).
  const float* k_at(int64_t seq, int64_t pos, int64_t kvh, bool wide) const {
    return (wide ? wide_k_ : drawn_k_).data() + slot(seq, pos) * row() + kvh * s_.head_dim;
  }
  const float* v_at(int64_t seq, int64_t pos, int64_t kvh, bool wide) const {
    return (wide ? wide_v_ : drawn_v_).data() + slot(seq, pos) * row() + kvh * s_.head_dim;
  }
  PagedKvLayer layer() const { return {k_.data(), v_.data(), bs_, types_.k, types_.v}; }
  // The stored values widened, as an f32 cache.
  PagedKvLayer widened_layer() const { return {wide_k_.data(), wide_v_.data(), bs_}; }
  const BlockTableView* views() const { return views_.data(); }

 private:
  int64_t row() const { return s_.n_kv_heads * s_.head_dim; }
  int64_t slot(int64_t seq, int64_t pos) const { return tables_[seq][pos / bs_] * bs_ + pos % bs_; }
  Shape s_;
  int64_t bs_;
  KvTypes types_;
  std::vector<float> drawn_k_, drawn_v_, wide_k_, wide_v_;
  std::vector<uint8_t> k_, v_;  // as stored
  std::vector<std::vector<int32_t>> tables_;
  std::vector<BlockTableView> views_;
};

struct Query {
  std::vector<int32_t> pos, seq;
  std::vector<float> q;  // [n][n_heads][head_dim]
};

Query make_queries(const Shape& s, std::vector<int32_t> seq, std::vector<int32_t> pos,
                   uint32_t seed) {
  Query out{std::move(pos), std::move(seq), {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  out.q.resize(out.pos.size() * s.n_heads * s.head_dim);
  for (auto& x : out.q) x = dist(rng);
  return out;
}

// Gemma's options of AttentionArgs (all off by default).
struct Scoring {
  int64_t window = 0;
  float divisor = 0.0f;
  float softcap = 0.0f;
};

AttentionArgs make_args(const Shape& s, const PagedKvLayer& layer, const BlockTableView* tables,
                        const Query& q, float* out, const Scoring& scoring) {
  AttentionArgs a;
  a.n_tokens = static_cast<int64_t>(q.pos.size());
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.head_dim = s.head_dim;
  a.q = q.q.data();
  a.out = out;
  a.positions = q.pos.data();
  a.seq_index = q.seq.data();
  a.block_tables = tables;
  a.kv = layer;
  a.window = scoring.window;
  a.score_divisor = scoring.divisor;
  a.softcap = scoring.softcap;
  return a;
}

std::vector<float> run_layer(IsaLevel isa, const Shape& s, const PagedKvLayer& layer,
                             const BlockTableView* tables, const Query& q, int threads = 1,
                             const Scoring& scoring = {}) {
  std::vector<float> out(q.q.size(), -7.0f);
  const AttentionArgs a = make_args(s, layer, tables, q, out.data(), scoring);
  if (isa == cpu_isa_level()) {
    ThreadPool tp(threads);
    attention(a, tp);
  } else {
    for (int64_t t = 0; t < a.n_tokens; ++t)
      for (int64_t h = 0; h < s.n_kv_heads; ++h) attention_task(isa, a, t, h);
  }
  return out;
}

std::vector<float> run(IsaLevel isa, const Shape& s, const Pool& pool, const Query& q,
                       int threads = 1, const Scoring& scoring = {}) {
  return run_layer(isa, s, pool.layer(), pool.views(), q, threads, scoring);
}

// Whether the cache holds heads under 32 values of q8_0 / q4_0: one short block each, which
// the scalar kernels read on every ISA path.
bool short_blocks(const Shape& s, KvTypes types) {
  return kv_type_short_blocks(types.k, s.head_dim) || kv_type_short_blocks(types.v, s.head_dim);
}

// Whether attention scores a cache of these types with int8 dots (attention_int8.h).
bool int8_scores(const Shape& s, KvTypes types) {
  AttentionArgs a;
  a.head_dim = s.head_dim;
  a.kv.k_dtype = types.k;
  a.kv.v_dtype = types.v;
  return attention_int8_scores(a);
}

// A query head as the int8 path sees it: quantized, then scaled back (exact in double).
std::vector<double> int8_query_values(const float* q, int64_t hd) {
  QueryInt8 qq;
  attention_quantize_query(q, 1, hd, 1.0f, qq);
  std::vector<double> out(hd);
  for (int64_t i = 0; i < hd; ++i) out[i] = double(qq.q[0][i]) * qq.d[0][i / qq.seg];
  return out;
}

// Two-pass softmax in double, one head at a time, over the drawn values (wide = false) or
// the stored ones (wide = true), with the query as given or (int8_query) as the int8 path
// quantizes it. With a window w, a query at p sees positions max(0, p - w + 1)..p.
std::vector<double> reference(const Shape& s, const Pool& pool, const Query& q, bool wide,
                              const Scoring& scoring = {}, bool int8_query = false) {
  const int64_t hd = s.head_dim, n_rep = s.n_heads / s.n_kv_heads;
  const double divisor = scoring.divisor > 0 ? scoring.divisor : std::sqrt(double(hd));
  std::vector<double> out(q.q.size());
  for (size_t t = 0; t < q.pos.size(); ++t)
    for (int64_t h = 0; h < s.n_heads; ++h) {
      const float* qf = q.q.data() + (t * s.n_heads + h) * hd;
      std::vector<double> qh(qf, qf + hd);
      if (int8_query) qh = int8_query_values(qf, hd);
      const int64_t first = scoring.window > 0 ? std::max<int64_t>(0, q.pos[t] - scoring.window + 1) : 0;
      std::vector<double> sc(q.pos[t] + 1 - first);
      for (int64_t p = first; p <= q.pos[t]; ++p) {
        const float* k = pool.k_at(q.seq[t], p, h / n_rep, wide);
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(qh[i]) * k[i];
        d /= divisor;
        if (scoring.softcap > 0) d = scoring.softcap * std::tanh(d / scoring.softcap);
        sc[p - first] = d;
      }
      const double mx = *std::max_element(sc.begin(), sc.end());
      double sum = 0;
      for (auto& x : sc) sum += (x = std::exp(x - mx));
      for (int64_t p = first; p <= q.pos[t]; ++p) {
        const float* v = pool.v_at(q.seq[t], p, h / n_rep, wide);
        for (int64_t i = 0; i < hd; ++i) out[(t * s.n_heads + h) * hd + i] += sc[p - first] / sum * v[i];
      }
    }
  return out;
}

const Shape kShapes[] = {
    {8, 4, 8},    // stories260K
    {4, 4, 64},   // multi-head
    {6, 2, 128},  // GQA, 3 per group
    {20, 2, 19},  // GQA groups above kAttentionGroup, odd head_dim
    {3, 1, 33},   // MQA
};

// What storing K/V in the type costs against exact attention on the drawn f32 values
// (|q| ~ 1, |k| ~ 2, |v| ~ 1): f16 keeps 11 significant bits, bf16 8; q8_0 a step of 1/127
// of each 32-block's largest value, q4_0 1/8.
double storage_tolerance(DType t) {
  switch (t) {
    case DType::kF32: return 2e-5;
    case DType::kF16: return 3e-3;
    case DType::kBF16: return 2.5e-2;
    case DType::kQ8_0: return 6e-2;
    default: return 1.0;
  }
}

TEST(Attention, EveryPathMatchesReference) {
  for (DType dtype : kKvTypes)
    for (const Shape& s : kShapes)
      for (int64_t bs : {16, 5}) {
        if (!shape_fits(s, dtype)) continue;
        const Pool pool(s, bs, {150, 5, 70}, 3, dtype);
        const Query q = make_queries(s, {0, 0, 0, 1, 2, 2, 0}, {0, 63, 64, 4, 65, 69, 149}, 4);
        // Against the stored values: only the f32 arithmetic's error (with the query as the
        // int8 path quantizes it, where K is scored so).
        const auto want = reference(s, pool, q, true, {}, int8_scores(s, dtype));
        // Against the drawn values: plus what rounding K/V to the type costs.
        const auto drawn = reference(s, pool, q, false);
        const double tol = storage_tolerance(dtype);
        for (IsaLevel isa : available_isas()) {
          const auto got = run(isa, s, pool, q);
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
                << "i=" << i << " head_dim=" << s.head_dim << " isa=" << isa_level_name(isa)
                << " kv=" << dtype_name(dtype) << " block size " << bs;
            ASSERT_NEAR(got[i], drawn[i], tol * (1 + std::fabs(drawn[i])))
                << "i=" << i << " head_dim=" << s.head_dim << " isa=" << isa_level_name(isa)
                << " kv=" << dtype_name(dtype) << " block size " << bs;
          }
        }
      }
}

// A 16-bit or quantized cache widens (dequantizes) on load and then runs the f32 arithmetic
// unchanged: the same bits as an f32 cache holding the widened values, on every path, for K
// and V of one type or of two (short blocks: the scalar path's bits, which they take on every
// path). Not for K scored with int8 dots (the query is quantized too:
// Int8ScoresMatchTheirReference).
TEST(Attention, NarrowCachesGiveTheF32BitsOfTheirValues) {
  const KvTypes pairs[] = {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                           {DType::kQ8_0, DType::kF16}, {DType::kF16, DType::kQ4_0},
                           {DType::kQ4_0, DType::kQ8_0}};
  for (KvTypes types : pairs)
    for (const Shape& s : kShapes) {
      if (!shape_fits(s, types) || int8_scores(s, types)) continue;
      const Pool pool(s, 16, {150, 5, 70}, 3, types);
      const Query q = make_queries(s, {0, 0, 1, 2, 0}, {0, 64, 4, 69, 149}, 5);
      for (IsaLevel isa : available_isas()) {
        const auto narrow = run(isa, s, pool, q);
        const IsaLevel wide_isa = short_blocks(s, types) ? IsaLevel::kScalar : isa;
        const auto wide = run_layer(wide_isa, s, pool.widened_layer(), pool.views(), q);
        ASSERT_EQ(0, std::memcmp(narrow.data(), wide.data(), narrow.size() * sizeof(float)))
            << kv_types_name(types) << " head_dim=" << s.head_dim << " isa=" << isa_level_name(isa);
      }
    }
}

// Heads narrower than a block (stories260K: 8 values, a short block each) and wider (64: two
// blocks a head) find their own values: a head's result moves only with its own KV head.
TEST(Attention, QuantizedHeadsReadTheirOwnValues) {
  for (const Shape& s : {Shape{8, 4, 8}, Shape{4, 4, 64}, Shape{4, 2, 16}})
    for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
      const Pool pool(s, 4, {9}, 11, dtype);
      const Query q = make_queries(s, {0}, {0}, 6);
      for (IsaLevel isa : available_isas()) {
        const auto got = run(isa, s, pool, q);
        const int64_t n_rep = s.n_heads / s.n_kv_heads;
        for (int64_t h = 0; h < s.n_heads; ++h)
          for (int64_t i = 0; i < s.head_dim; ++i)
            ASSERT_FLOAT_EQ(got[h * s.head_dim + i], pool.v_at(0, 0, h / n_rep, true)[i])
                << dtype_name(dtype) << " head " << h << " isa=" << isa_level_name(isa);
      }
    }
}

// The storage types really differ: a test that passed an f32 layer for every dtype would
// not notice otherwise.
TEST(Attention, KvTypeChangesTheResult) {
  const Shape s{4, 2, 16};
  const Query q = make_queries(s, {0}, {40}, 6);
  const auto f32 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, DType::kF32), q);
  const auto f16 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, DType::kF16), q);
  const auto bf16 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, DType::kBF16), q);
  const auto q8 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, DType::kQ8_0), q);
  const auto q4 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, DType::kQ4_0), q);
  const auto k_q8 = run(cpu_isa_level(), s, Pool(s, 8, {41}, 7, {DType::kQ8_0, DType::kF32}), q);
  EXPECT_NE(0, std::memcmp(f32.data(), f16.data(), f32.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(f16.data(), bf16.data(), f16.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(f32.data(), q8.data(), f32.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(q8.data(), q4.data(), q8.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(k_q8.data(), q8.data(), q8.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(k_q8.data(), f32.data(), q8.size() * sizeof(float)));
}

// Rows of token t in a result.
std::vector<float> rows_of(const std::vector<float>& all, const Shape& s, size_t t) {
  const size_t n = s.n_heads * s.head_dim;
  return {all.begin() + t * n, all.begin() + (t + 1) * n};
}

TEST(Attention, TokenResultIsIndependentOfBatchThreadsAndBlockSize) {
  for (DType dtype : kKvTypes)
    for (const Shape& s : kShapes) {
      if (!shape_fits(s, dtype)) continue;
      const Pool pool16(s, 16, {150, 5, 70}, 3, dtype);
      const Pool pool4(s, 4, {150, 5, 70}, 3, dtype);
      const Pool pool1(s, 1, {150, 5, 70}, 3, dtype);
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
                << "token " << t << " isa=" << isa_level_name(isa) << " kv=" << dtype_name(dtype);
          }
        }
      }
      const auto one = run(cpu_isa_level(), s, pool16, batch, 1);
      for (int threads : {2, 3}) {
        const auto got = run(cpu_isa_level(), s, pool4, batch, threads);
        EXPECT_EQ(0, std::memcmp(got.data(), one.data(), got.size() * sizeof(float)))
            << threads << " threads, kv=" << dtype_name(dtype);
      }
    }
}

// Gemma's sliding window (shorter and longer than a chunk, crossing chunk and block edges),
// query scale and soft-cap, on every path; and a windowed token's result is still independent
// of the batch and block size.
TEST(Attention, WindowScaleAndSoftcapMatchReference) {
  const Shape s{6, 2, 32};
  const Query q = make_queries(s, {0, 0, 0, 0, 1, 1}, {0, 3, 64, 149, 4, 69}, 12);
  for (const Scoring sc : {Scoring{4, 0.0f, 0.0f}, Scoring{70, 4.0f, 0.0f}, Scoring{0, 0.0f, 1.5f},
                           Scoring{5, 3.0f, 2.0f}}) {
    for (int64_t bs : {16, 3}) {
      const Pool pool(s, bs, {150, 70}, 9);
      const auto want = reference(s, pool, q, true, sc);
      const Pool pool1(s, 1, {150, 70}, 9);
      for (IsaLevel isa : available_isas()) {
        const auto got = run(isa, s, pool, q, 1, sc);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
              << "i=" << i << " window " << sc.window << " softcap " << sc.softcap << " isa=" << isa_level_name(isa);
        const auto other = run(isa, s, pool1, q, 2, sc);
        ASSERT_EQ(0, std::memcmp(got.data(), other.data(), got.size() * sizeof(float))) << isa_level_name(isa);
      }
    }
  }
  // The window changes the result once the context is longer than it.
  const Pool pool(s, 16, {150, 70}, 9);
  const auto all = run(cpu_isa_level(), s, pool, q);
  const auto windowed = run(cpu_isa_level(), s, pool, q, 1, Scoring{4, 0.0f, 0.0f});
  EXPECT_NE(0, std::memcmp(all.data() + 2 * 6 * 32, windowed.data() + 2 * 6 * 32, 6 * 32 * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(all.data(), windowed.data(), 2 * 6 * 32 * sizeof(float)));  // positions 0, 3
}

// The tiled kernel (several tokens of a sequence sharing each K/V load) gives every token
// exactly the per-token kernel's bits: tiles of the path's size and of the whole batch, a
// prefill run crossing a chunk edge, tokens far apart in one tile (contexts ending in
// different chunks), tiles crossing sequences, GQA groups of 1 to 10 heads, heads of 16 to
// 256 values (every split of a dot's lanes into the transposed scores' passes, and sizes that
// keep the shuffled lane sums), K/V types alike and mixed, a window (tokens past it take the
// per-token kernel) and a soft-cap.
TEST(Attention, TiledTasksGiveThePerTokenBits) {
  const Shape shapes[] = {{32, 4, 64}, {16, 2, 32}, {20, 2, 32}, {12, 2, 16}, {4, 4, 64},
                          {6, 2, 128}, {3, 1, 33},  {16, 4, 64}, {8, 1, 96},  {16, 2, 128},
                          {8, 1, 256}};
  std::vector<int32_t> seq, pos;
  for (int32_t p = 100; p < 141; ++p) {
    seq.push_back(0);
    pos.push_back(p);
  }
  seq.insert(seq.end(), {0, 0, 1, 1, 1, 2, 0});
  pos.insert(pos.end(), {3, 149, 0, 63, 64, 69, 64});
  const KvTypes type_pairs[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                {DType::kQ8_0, DType::kF16}, {DType::kF16, DType::kQ4_0},
                                {DType::kBF16, DType::kF32}};
  for (const Shape& s : shapes)
    for (const KvTypes& types : type_pairs) {
      if (!shape_fits(s, types)) continue;
      const Pool pool(s, 16, {150, 70, 70}, 21, types);
      const Query q = make_queries(s, seq, pos, 22);
      const int64_t n = static_cast<int64_t>(pos.size());
      for (const Scoring sc : {Scoring{}, Scoring{120, 0.0f, 0.0f}, Scoring{0, 3.0f, 1.5f}})
        for (IsaLevel isa : available_isas()) {
          if (isa == IsaLevel::kScalar) continue;
          std::vector<float> want(q.q.size(), -7.0f);
          const AttentionArgs a_want = make_args(s, pool.layer(), pool.views(), q, want.data(), sc);
          for (int64_t t = 0; t < n; ++t)
            for (int64_t h = 0; h < s.n_kv_heads; ++h) attention_task(isa, a_want, t, h);
          for (int64_t tile : {attention_tile_tokens(isa, s.n_heads / s.n_kv_heads), n}) {
            std::vector<float> got(q.q.size(), -7.0f);
            const AttentionArgs a = make_args(s, pool.layer(), pool.views(), q, got.data(), sc);
            for (int64_t t0 = 0; t0 < n; t0 += tile)
              for (int64_t h = 0; h < s.n_kv_heads; ++h)
                attention_tile_task(isa, a, t0, std::min(tile, n - t0), h);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << "heads " << s.n_heads << "/" << s.n_kv_heads << " head_dim " << s.head_dim << " "
                << kv_types_name(types) << " tile " << tile << " window " << sc.window
                << " softcap " << sc.softcap << " isa=" << isa_level_name(isa);
          }
        }
    }
}

// The int8 query: each segment's largest value maps to +-127, every value within half a step
// of its own, the sums are the bias terms, an all-zero segment is zeros with scale 0, and the
// scores' scales are the segments' over the divisor.
TEST(Attention, Int8QueryQuantization) {
  for (int64_t hd : {8, 16, 64, 128}) {
    const Shape s{4, 1, hd};
    Query q = make_queries(s, {0}, {0}, 31);
    std::fill(q.q.begin() + hd, q.q.begin() + hd + std::min<int64_t>(hd, 32), 0.0f);  // head 1, segment 0
    QueryInt8 qq;
    attention_quantize_query(q.q.data(), 4, hd, 3.0f, qq);
    ASSERT_EQ(qq.seg, std::min<int64_t>(hd, 32));
    ASSERT_EQ(qq.n_seg * qq.seg, hd);
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t sg = 0; sg < qq.n_seg; ++sg) {
        int32_t sum = 0, qmax = 0;
        float amax = 0;
        for (int64_t i = sg * qq.seg; i < (sg + 1) * qq.seg; ++i) {
          const float x = q.q[g * hd + i];
          amax = std::max(amax, std::fabs(x));
          ASSERT_LE(std::fabs(qq.q[g][i] * qq.d[g][sg] - x), 0.5001f * qq.d[g][sg]) << hd << " " << g << " " << i;
          sum += qq.q[g][i];
          qmax = std::max<int32_t>(qmax, std::abs(qq.q[g][i]));
        }
        EXPECT_EQ(sum, qq.sum[g][sg]);
        EXPECT_FLOAT_EQ(qq.d[g][sg], amax / 127.0f);
        EXPECT_EQ(qq.e[g][sg], qq.d[g][sg] / 3.0f);  // the divisor, folded in
        EXPECT_EQ(qmax, amax > 0 ? 127 : 0) << hd << " " << g << " " << sg;
      }
    EXPECT_EQ(qq.d[1][0], 0.0f);
  }
}

// q8_0 / q4_0 K scored with int8 dots, on every path: decode-like shapes (heads of 64 and 128:
// whole blocks, the transposed-block kernels; of 8 and 16: a short block each, the scalar
// kernels), contexts over several chunks ending mid-pass, against the double
// reference with the same quantized query; and the int8 path is really taken (its result
// differs from the f32 path over the dequantized K).
TEST(Attention, Int8ScoresMatchTheirReference) {
  const Shape shapes[] = {{32, 4, 64}, {8, 4, 8}, {4, 2, 16}, {6, 2, 128}, {4, 1, 32}, {2, 1, 256}};
  const KvTypes pairs[] = {DType::kQ8_0, DType::kQ4_0, {DType::kQ8_0, DType::kF16}, {DType::kQ4_0, DType::kF32}};
  for (const Shape& s : shapes)
    for (KvTypes types : pairs) {
      if (!shape_fits(s, types)) continue;
      ASSERT_TRUE(int8_scores(s, types));
      const Pool pool(s, 16, {300, 37}, 41, types);
      const Query q = make_queries(s, {0, 0, 1, 0}, {299, 130, 36, 17}, 42);
      const auto want = reference(s, pool, q, true, {}, true);
      for (IsaLevel isa : available_isas()) {
        const auto got = run(isa, s, pool, q);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
              << "i=" << i << " heads " << s.n_heads << "/" << s.n_kv_heads << " head_dim " << s.head_dim
              << " " << kv_types_name(types) << " isa=" << isa_level_name(isa);
        const auto dequantized = run_layer(isa, s, pool.widened_layer(), pool.views(), q);
        EXPECT_NE(0, std::memcmp(got.data(), dequantized.data(), got.size() * sizeof(float)))
            << kv_types_name(types) << " isa=" << isa_level_name(isa);
      }
    }
}

// The int8 dots of every vector path the CPU has (AVX2's vpmaddubsw, AVX-VNNI's and AVX-512
// VNNI's vpdpbusd) are exact integer sums, and the float steps around them are the same lane
// for lane: so the whole attention result is the same bits on each.
TEST(Attention, Int8ScoresAreTheSameBitsOnEveryVectorPath) {
  if (cpu_isa_level() < IsaLevel::kAvx2) GTEST_SKIP() << "no vector path";
  using Task = void (*)(const AttentionArgs&, int64_t, int64_t);
  std::vector<std::pair<const char*, Task>> paths = {{"avx2", detail::attention_task_avx2}};
  if (cpu_features().avxvnni) paths.emplace_back("avx2-vnni", detail::attention_task_avxvnni);
  if (cpu_isa_level() == IsaLevel::kAvx512 && cpu_features().avx512vnni)
    paths.emplace_back("avx512", detail::attention_task_avx512);
  if (paths.size() < 2) GTEST_SKIP() << "one int8 path on this CPU";
  // (Heads under 32 values never reach these kernels: ShortBlockHeadsMatchTheirReference.)
  const Shape shapes[] = {{32, 4, 64}, {4, 1, 32}, {2, 1, 256}};
  for (const Shape& s : shapes)
    for (KvTypes types : {KvTypes(DType::kQ8_0), KvTypes(DType::kQ4_0), KvTypes(DType::kQ8_0, DType::kF16)}) {
      if (!shape_fits(s, types)) continue;
      const Pool pool(s, 16, {300, 37}, 43, types);
      const Query q = make_queries(s, {0, 0, 1}, {299, 140, 36}, 44);
      std::vector<std::vector<float>> outs;
      for (const auto& [name, task] : paths) {
        std::vector<float> out(q.q.size(), -7.0f);
        const AttentionArgs a = make_args(s, pool.layer(), pool.views(), q, out.data(), {});
        for (int64_t t = 0; t < a.n_tokens; ++t)
          for (int64_t h = 0; h < s.n_kv_heads; ++h) task(a, t, h);
        if (!outs.empty()) {
          EXPECT_EQ(0, std::memcmp(out.data(), outs[0].data(), out.size() * sizeof(float)))
              << name << " vs avx2, heads " << s.n_heads << "/" << s.n_kv_heads << " head_dim "
              << s.head_dim << " " << kv_types_name(types);
        }
        outs.push_back(std::move(out));
      }
    }
}

// A token's KV heads run side by side (attention_token_task, what attention() hands out for
// int8-scored K with tokens enough) give each head exactly its own task's bits, windows and
// soft-caps included, on every path; so does the f32 path it falls back to for other K.
TEST(Attention, TokenTasksGiveThePerHeadBits) {
  const Shape shapes[] = {{32, 4, 64}, {8, 4, 8}, {20, 2, 16}, {6, 3, 32}};
  const KvTypes pairs[] = {DType::kQ8_0, DType::kQ4_0, {DType::kQ8_0, DType::kF16}, DType::kF16};
  for (const Shape& s : shapes)
    for (KvTypes types : pairs) {
      if (!shape_fits(s, types)) continue;
      const Pool pool(s, 16, {300, 37}, 45, types);
      const Query q = make_queries(s, {0, 1, 0}, {299, 36, 90}, 46);
      for (const Scoring& sc : {Scoring{}, Scoring{70, 0.0f, 0.0f}, Scoring{0, 5.0f, 30.0f}})
        for (IsaLevel isa : available_isas()) {
          std::vector<float> want(q.q.size(), -7.0f), got(q.q.size(), -9.0f);
          const AttentionArgs a_want = make_args(s, pool.layer(), pool.views(), q, want.data(), sc);
          const AttentionArgs a_got = make_args(s, pool.layer(), pool.views(), q, got.data(), sc);
          for (int64_t t = 0; t < a_want.n_tokens; ++t) {
            for (int64_t h = 0; h < s.n_kv_heads; ++h) attention_task(isa, a_want, t, h);
            attention_token_task(isa, a_got, t);
          }
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << "heads " << s.n_heads << "/" << s.n_kv_heads << " head_dim " << s.head_dim << " "
              << kv_types_name(types) << " window " << sc.window << " isa=" << isa_level_name(isa);
        }
    }
}

// Heads under 32 values (stories260K's 8, down to 1) of q8_0 / q4_0, alone and mixed with the
// other types, each head one short block with its own scale: against the double reference over
// the stored values (the f32 arithmetic's error; with the int8 query where K is int8-scored)
// and over the drawn ones (what the types cost), and the same bits on every ISA path, thread
// count and block size, and through the token and tile tasks (the scalar kernels serve all).
TEST(Attention, ShortBlockHeadsMatchTheirReference) {
  const Shape shapes[] = {{8, 4, 8}, {4, 2, 16}, {6, 3, 4}, {20, 2, 8}, {4, 4, 2}, {2, 2, 1}};
  const KvTypes pairs[] = {DType::kQ8_0,  DType::kQ4_0, {DType::kQ8_0, DType::kF16}, {DType::kF16, DType::kQ4_0},
                           {DType::kQ4_0, DType::kQ8_0}, {DType::kF32, DType::kQ8_0}, {DType::kBF16, DType::kQ4_0}};
  int checked = 0;
  for (const Shape& s : shapes)
    for (KvTypes types : pairs) {
      if (!shape_fits(s, types)) continue;  // q4_0: even heads
      ASSERT_TRUE(short_blocks(s, types));
      ++checked;
      const std::string what = kv_types_name(types) + " heads " + std::to_string(s.n_heads) + "/" +
                               std::to_string(s.n_kv_heads) + " head_dim " + std::to_string(s.head_dim);
      const Pool pool(s, 16, {150, 5, 70}, 51, types);
      const Pool pool3(s, 3, {150, 5, 70}, 51, types);
      const Query q = make_queries(s, {0, 0, 0, 1, 2, 2, 0, 0}, {0, 63, 64, 4, 65, 69, 148, 149}, 52);
      const auto want = reference(s, pool, q, true, {}, int8_scores(s, types));
      const auto drawn = reference(s, pool, q, false);
      const double tol = std::max(storage_tolerance(types.k), storage_tolerance(types.v));
      const auto scalar = run(IsaLevel::kScalar, s, pool, q);
      for (size_t i = 0; i < scalar.size(); ++i) {
        ASSERT_NEAR(scalar[i], want[i], 2e-5 * (1 + std::fabs(want[i]))) << "i=" << i << " " << what;
        ASSERT_NEAR(scalar[i], drawn[i], tol * (1 + std::fabs(drawn[i]))) << "i=" << i << " " << what;
      }
      const auto same_bits = [&](const std::vector<float>& got, const std::string& how) {
        ASSERT_EQ(0, std::memcmp(got.data(), scalar.data(), got.size() * sizeof(float))) << how << " " << what;
      };
      for (IsaLevel isa : available_isas()) {
        same_bits(run(isa, s, pool, q), std::string("task ") + isa_level_name(isa));
        std::vector<float> token(q.q.size(), -7.0f), tile(q.q.size(), -7.0f);
        const AttentionArgs a_token = make_args(s, pool.layer(), pool.views(), q, token.data(), {});
        const AttentionArgs a_tile = make_args(s, pool.layer(), pool.views(), q, tile.data(), {});
        for (int64_t t = 0; t < a_token.n_tokens; ++t) attention_token_task(isa, a_token, t);
        for (int64_t h = 0; h < s.n_kv_heads; ++h) attention_tile_task(isa, a_tile, 0, a_tile.n_tokens, h);
        same_bits(token, std::string("token task ") + isa_level_name(isa));
        same_bits(tile, std::string("tile task ") + isa_level_name(isa));
      }
      for (int threads : {1, 2, 3}) same_bits(run(cpu_isa_level(), s, pool3, q, threads), std::to_string(threads) + " threads");
    }
  EXPECT_EQ(checked, 38);  // 7 pairs x 5 even shapes, 3 without q4_0 at head_dim 1
}

TEST(Attention, SinglePositionReturnsItsValue) {
  const Shape s{4, 2, 16};
  for (DType dtype : kKvTypes) {
    const Pool pool(s, 4, {3}, 5, dtype);
    const Query q = make_queries(s, {0}, {0}, 6);
    for (IsaLevel isa : available_isas()) {
      const auto got = run(isa, s, pool, q);
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 16; ++i)
          EXPECT_FLOAT_EQ(got[h * 16 + i], pool.v_at(0, 0, h / 2, true)[i]) << dtype_name(dtype);
    }
  }
}

}  // namespace
}  // namespace tally::cpu
