// The AVX-512 paths of the KV row stores and of attention, on a CPU without AVX-512: the
// *_avx512.cpp files compiled against SIMDe (header-only, Debian libsimde-dev), which
// implements the AVX-512 intrinsics portably. SIMDe 0.7.4 lacks the eight conversions below;
// they are spelled here with SIMDe's own F16C and AVX2 ones, or as the loops the instructions
// define. Row stores must give the scalar bits; attention must match the double reference and
// give, on a 16-bit cache, the bits of the f32 path over the widened values, and over q8_0 /
// q4_0 K (int8 scores) the bits of the host's AVX2 path. (The real
// instructions are checked by tests/ops/attention on CPUs that have them.) Built with AVX2, F16C
// and FMA, like matmul_avx512_emulated.cpp: SIMDe then uses them natively.
#include <immintrin.h>  // first, so SIMDe's aliases below only rename later uses
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

#include <cmath>
#include <cstdint>

namespace tally_emulated {

inline simde__m512 cvtph_ps(simde__m256i h) {
  const simde__m512 lo =
      simde_mm512_castps256_ps512(simde_mm256_cvtph_ps(simde_mm256_castsi256_si128(h)));
  return simde_mm512_insertf32x8(lo, simde_mm256_cvtph_ps(simde_mm256_extracti128_si256(h, 1)), 1);
}
inline simde__m256i cvtps_ph(simde__m512 v) {
  const simde__m256 lo = simde_mm512_castps512_ps256(v);
  const simde__m256 hi =
      simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(v), 1));
  return simde_mm256_set_m128i(simde_mm256_cvtps_ph(hi, 0), simde_mm256_cvtps_ph(lo, 0));
}
inline simde__m512i cvtepu16_epi32(simde__m256i h) {
  const simde__m512i lo =
      simde_mm512_castsi256_si512(simde_mm256_cvtepu16_epi32(simde_mm256_castsi256_si128(h)));
  return simde_mm512_inserti64x4(
      lo, simde_mm256_cvtepu16_epi32(simde_mm256_extracti128_si256(h, 1)), 1);
}
inline simde__m256i cvtepi32_epi16(simde__m512i v) {  // truncates each lane
  int32_t in[16];
  int16_t out[16];
  simde_mm512_storeu_si512(in, v);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int16_t>(in[i]);
  return simde_mm256_loadu_si256(out);
}
inline simde__m512i cvtps_epi32(simde__m512 v) {  // rounds to nearest even (MXCSR default)
  float in[16];
  int32_t out[16];
  simde_mm512_storeu_ps(in, v);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<int32_t>(std::nearbyint(in[i]));
  return simde_mm512_loadu_si512(out);
}

// 16 bytes widened to int32 lanes: sign-extended for int8_t (q8_0 KV), zero- for uint8_t (q4_0).
template <class Byte>
simde__m512i widen_bytes(simde__m128i b) {
  Byte in[16];
  int32_t out[16];
  simde_mm_storeu_si128(in, b);
  for (int i = 0; i < 16; ++i) out[i] = in[i];
  return simde_mm512_loadu_si512(out);
}
inline simde__m512 cvtepi32_ps(simde__m512i v) {  // exact for the small integers of q8_0 / q4_0
  int32_t in[16];
  float out[16];
  simde_mm512_storeu_si512(in, v);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<float>(in[i]);
  return simde_mm512_loadu_ps(out);
}

}  // namespace tally_emulated

#define _mm512_cvtph_ps(h) tally_emulated::cvtph_ps(h)
#define _mm512_cvtps_ph(v, imm) tally_emulated::cvtps_ph(v)
#define _mm512_cvtepu16_epi32(h) tally_emulated::cvtepu16_epi32(h)
#define _mm512_cvtepi32_epi16(v) tally_emulated::cvtepi32_epi16(v)
#define _mm512_cvtps_epi32(v) tally_emulated::cvtps_epi32(v)
#define _mm512_cvtepi8_epi32(b) tally_emulated::widen_bytes<int8_t>(b)
#define _mm512_cvtepi32_ps(v) tally_emulated::cvtepi32_ps(v)
#define _mm512_cvtepu8_epi32(b) tally_emulated::widen_bytes<uint8_t>(b)
// SIMDe 0.7.4 implements this one but gives it no native alias (the tiled attention's lane sums).
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) simde_mm512_shuffle_f32x4(a, b, imm)

#define attention_task_avx512 attention_task_avx512_emulated
#define attention_token_task_avx512 attention_token_task_avx512_emulated
#define attention_tile_avx512 attention_tile_avx512_emulated
#define kv_row_store_avx512 kv_row_store_avx512_emulated
#include "backend/cpu/attention_avx512.cpp"
#include "backend/cpu/kv_row_avx512.cpp"
#undef attention_task_avx512
#undef attention_token_task_avx512
#undef attention_tile_avx512
#undef kv_row_store_avx512

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/attention_int8.h"
#include "tensor/kv_types.h"

namespace tally::cpu {
namespace {

bool host_ok() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

TEST(Avx512Emulated, KvRowStoresTheScalarBits) {
  if (!host_ok()) GTEST_SKIP() << "this check is built for AVX2 hosts";
  std::vector<float> values = {0.0f,
                               -0.0f,
                               INFINITY,
                               -INFINITY,
                               65520.0f,
                               65519.99f,
                               0x1p-25f,
                               0x3p-25f,
                               std::bit_cast<float>(0x3f808000u),
                               std::bit_cast<float>(0x3f818000u),
                               std::bit_cast<float>(0x7f7f8000u),
                               std::bit_cast<float>(0x7fa00000u),
                               std::bit_cast<float>(0xffc00001u)};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 3000; ++i)
    values.push_back(i % 2 ? std::bit_cast<float>(bits(rng))
                           : normal(rng) * std::ldexp(1.0f, i % 40 - 28));
  for (DType t : {DType::kF16, DType::kBF16, DType::kF32})
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{33},
                      static_cast<int64_t>(values.size())}) {
      std::vector<uint8_t> emu(n * 4 + 8, 0xab), ref(n * 4 + 8, 0xab);
      detail::kv_row_store_avx512_emulated(t, values.data(), emu.data(), n);
      kv_row_store(IsaLevel::kScalar, t, values.data(), ref.data(), n, 1);
      EXPECT_EQ(0, std::memcmp(emu.data(), ref.data(), emu.size())) << dtype_name(t) << " n=" << n;
    }
}

struct Case {
  int64_t n_heads, n_kv_heads, head_dim;
};

// One sequence of 150 positions in shuffled blocks of 5, stored as `dtype`; the output of
// one query per position listed.
struct Outcome {
  std::vector<float> out;
  std::vector<double> want;  // double reference over the stored values
  bool int8_scores = false;  // K scored with int8 dots of a quantized query (attention_int8.h)
};

Outcome run(const Case& c, DType dtype, bool widened,
            void (*task)(const AttentionArgs&, int64_t, int64_t)) {
  const int64_t bs = 5, n_blocks = 32, row = c.n_kv_heads * c.head_dim;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(n_blocks * bs * row), v(k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = dist(rng) * 2.0f;
    v[i] = dist(rng);
  }
  std::vector<uint8_t> kq(k.size() * 4), vq(v.size() * 4);
  const auto n = static_cast<int64_t>(k.size());
  kv_row_store(IsaLevel::kScalar, dtype, k.data(), kq.data(), n, c.head_dim);
  kv_row_store(IsaLevel::kScalar, dtype, v.data(), vq.data(), n, c.head_dim);
  kv_row_load(dtype, kq.data(), k.data(), n, c.head_dim);  // the stored values
  kv_row_load(dtype, vq.data(), v.data(), n, c.head_dim);
  std::vector<int32_t> table(n_blocks);
  for (int32_t i = 0; i < n_blocks; ++i) table[i] = (i * 7) % n_blocks;
  const BlockTableView view{table.data(), n_blocks};
  const std::vector<int32_t> pos = {0, 15, 63, 64, 100, 149}, seq(pos.size(), 0);
  std::vector<float> q(pos.size() * c.n_heads * c.head_dim);
  for (auto& x : q) x = dist(rng);
  Outcome r;
  r.out.assign(q.size(), -7.0f);
  AttentionArgs a;
  a.n_tokens = static_cast<int64_t>(pos.size());
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.q = q.data();
  a.out = r.out.data();
  a.positions = pos.data();
  a.seq_index = seq.data();
  a.block_tables = &view;
  a.kv = widened ? PagedKvLayer{k.data(), v.data(), bs, DType::kF32, DType::kF32}
                 : PagedKvLayer{kq.data(), vq.data(), bs, dtype, dtype};
  r.int8_scores = attention_int8_scores(a);
  for (int64_t t = 0; t < a.n_tokens; ++t)
    for (int64_t h = 0; h < c.n_kv_heads; ++h) task(a, t, h);
  const int64_t hd = c.head_dim, n_rep = c.n_heads / c.n_kv_heads;
  r.want.assign(q.size(), 0.0);
  for (size_t t = 0; t < pos.size(); ++t)
    for (int64_t h = 0; h < c.n_heads; ++h) {
      auto at = [&](const std::vector<float>& x, int64_t p) {
        return x.data() + (table[p / bs] * bs + p % bs) * row + (h / n_rep) * hd;
      };
      std::vector<double> s(pos[t] + 1);
      double mx = -1e300, sum = 0;
      for (int64_t p = 0; p <= pos[t]; ++p) {
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(q[(t * c.n_heads + h) * hd + i]) * at(k, p)[i];
        s[p] = d / std::sqrt(double(hd));
        mx = std::max(mx, s[p]);
      }
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int64_t p = 0; p <= pos[t]; ++p)
        for (int64_t i = 0; i < hd; ++i)
          r.want[(t * c.n_heads + h) * hd + i] += s[p] / sum * at(v, p)[i];
    }
  return r;
}

TEST(Avx512Emulated, AttentionMatchesReferenceAndF32Bits) {
  if (!host_ok()) GTEST_SKIP() << "this check is built for AVX2 hosts";
  // tinyllama's heads (8 per KV head of 64) take the int8 scores for q8_0/q4_0 K. (Heads
  // under 32 values of q8_0/q4_0, stories260K's, are short blocks that the scalar kernels
  // read on every path: tests/ops/attention's ShortBlockHeadsMatchTheirReference.)
  for (const Case& c : {Case{8, 4, 8}, Case{6, 2, 128}, Case{20, 2, 19}, Case{3, 1, 33}, Case{32, 4, 64}})
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      if (!kv_types_check_shape(dtype, c.n_kv_heads, c.head_dim).ok()) continue;  // q8_0/q4_0: whole blocks
      if (kv_type_short_blocks(dtype, c.head_dim)) continue;
      const Outcome got = run(c, dtype, false, detail::attention_task_avx512_emulated);
      // int8-scored K (q8_0/q4_0, whole 4-value groups) quantizes the query too: neither this
      // reference nor the f32 bits apply. Its integer sums are exact, and every float step
      // after them is the AVX2 path's, lane for lane: so the bits of the host's AVX2 path
      // (checked against its reference by Attention.Int8ScoresMatchTheirReference).
      if (got.int8_scores) {
        const Outcome avx2 = run(c, dtype, false, detail::attention_task_avx2);
        EXPECT_EQ(0, std::memcmp(got.out.data(), avx2.out.data(), got.out.size() * sizeof(float)))
            << dtype_name(dtype) << " heads " << c.n_heads << "/" << c.n_kv_heads << " head_dim=" << c.head_dim;
        continue;
      }
      for (size_t i = 0; i < got.out.size(); ++i)
        ASSERT_NEAR(got.out[i], got.want[i], 2e-5 * (1 + std::fabs(got.want[i])))
            << dtype_name(dtype) << " head_dim=" << c.head_dim << " i=" << i;
      const Outcome wide = run(c, dtype, true, detail::attention_task_avx512_emulated);
      EXPECT_EQ(0, std::memcmp(got.out.data(), wide.out.data(), got.out.size() * sizeof(float)))
          << dtype_name(dtype) << " head_dim=" << c.head_dim;
    }
}

// The tiled kernel over every token of the sequence, in tiles of the size attention() hands
// out, run as run()'s per-(token, head) task: the whole head on token 0, nothing after.
void tiled_head_task(const AttentionArgs& a, int64_t token, int64_t kv_head) {
  if (token != 0) return;
  const int64_t tile = attention_tile_tokens(IsaLevel::kAvx512, a.n_heads / a.n_kv_heads);
  for (int64_t t0 = 0; t0 < a.n_tokens; t0 += tile)
    detail::attention_tile_avx512_emulated(a, t0, std::min(tile, a.n_tokens - t0), kv_head);
}

TEST(Avx512Emulated, TiledAttentionGivesThePerTokenBits) {
  if (!host_ok()) GTEST_SKIP() << "this check is built for AVX2 hosts";
  // Whole 16-float vectors per head (the tiled kernel's condition); GQA groups of 1 to 8.
  for (const Case& c : {Case{6, 2, 128}, Case{16, 2, 32}, Case{4, 4, 16}, Case{8, 1, 64}})
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      if (!kv_types_check_shape(dtype, c.n_kv_heads, c.head_dim).ok() || kv_type_short_blocks(dtype, c.head_dim)) continue;
      const Outcome per_token = run(c, dtype, false, detail::attention_task_avx512_emulated);
      if (per_token.int8_scores) continue;  // int8-scored K never takes the tiled kernel
      const Outcome tiled = run(c, dtype, false, tiled_head_task);
      EXPECT_EQ(0, std::memcmp(per_token.out.data(), tiled.out.data(),
                               per_token.out.size() * sizeof(float)))
          << dtype_name(dtype) << " heads " << c.n_heads << "/" << c.n_kv_heads
          << " head_dim=" << c.head_dim;
    }
}

}  // namespace
}  // namespace tally::cpu
