// The AVX-512 VNNI matmul kernels on a CPU without AVX-512: matmul_avx512.cpp compiled against
// SIMDe, which implements the AVX-512 intrinsics portably, must give the scalar kernels' bits.
// (The real instructions are checked by tests/ops/matmul on CPUs that have them.)
#include <immintrin.h>  // first, so SIMDe's aliases below only rename later uses
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#define matmul_kernels_avx512_vnni matmul_kernels_avx512_vnni_emulated
#include "backend/cpu/matmul_avx512.cpp"
#undef matmul_kernels_avx512_vnni

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/matmul_repack.h"
#include "ops/matmul/matmul_test_util.h"

namespace tally::cpu::detail {
namespace {

std::vector<float> run(MatmulTileFn fn, const WeightMatrix& w, const std::vector<float>& x,
                       int64_t n_tokens) {
  const int64_t n_in = w.n_in;
  const bool k = act_form(w.type) == ActForm::kBlockK;
  std::vector<int8_t> q(n_tokens * n_in);
  std::vector<float> d(n_tokens * n_in / 32);
  std::vector<int16_t> sums(n_tokens * n_in / 16);
  const int64_t n_scales = n_in / (k ? kActBlockK : kActBlock);
  const int64_t n_sums = k ? n_in / kActSumGroup : n_scales;
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (k) {
      act_quantize_row_k(x.data() + t * n_in, n_in, q.data() + t * n_in, d.data() + t * n_scales,
                         sums.data() + t * n_sums);
    } else {
      act_quantize_row32(x.data() + t * n_in, n_in, q.data() + t * n_in, d.data() + t * n_scales,
                         sums.data() + t * n_sums);
    }
  }
  std::vector<int32_t> sums8(n_tokens * n_scales), minus_8sums(sums8.size()),
      minus_128sums(sums8.size());
  if (!k)
    act_block32_offsets(sums.data(), n_tokens * n_scales, sums8.data(), minus_8sums.data(),
                        minus_128sums.data());
  MatmulActs acts{x.data(),  q.data(),           d.data(),
                  sums.data(), n_tokens,          sums8.data(),
                  minus_8sums.data(), minus_128sums.data()};
  std::vector<float> y(n_tokens * w.n_out, NAN);
  fn(MatmulTile{&w, &acts, 0, w.n_out, y.data()});
  return y;
}

TEST(MatmulAvx512Emulated, BitIdenticalToScalar) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c"))
    GTEST_SKIP() << "this check is built for AVX2 hosts";
  const MatmulKernels& emu = matmul_kernels_avx512_vnni_emulated();
  const MatmulKernels& ref = matmul_kernels_scalar();
  struct Case {
    DType type;
    MatmulTileFn emu, ref;
    int64_t n_in;
  };
  const Case cases[] = {
      {DType::kQ8_0, emu.q8_0, ref.q8_0, 32},  {DType::kQ8_0, emu.q8_0, ref.q8_0, 800},
      {DType::kQ4_0, emu.q4_0, ref.q4_0, 96},  {DType::kQ4_0, emu.q4_0, ref.q4_0, 544},
      {DType::kQ4_K, emu.q4_k, ref.q4_k, 256}, {DType::kQ4_K, emu.q4_k, ref.q4_k, 2560},
      {DType::kQ6_K, emu.q6_k, ref.q6_k, 256}, {DType::kQ6_K, emu.q6_k, ref.q6_k, 2560},
      {DType::kQ4_1, emu.q4_1, ref.q4_1, 96},  {DType::kQ4_1, emu.q4_1, ref.q4_1, 800},
      {DType::kQ5_0, emu.q5_0, ref.q5_0, 96},  {DType::kQ5_0, emu.q5_0, ref.q5_0, 800},
      {DType::kQ5_1, emu.q5_1, ref.q5_1, 96},  {DType::kQ5_1, emu.q5_1, ref.q5_1, 800},
      {DType::kQ2_K, emu.q2_k, ref.q2_k, 256}, {DType::kQ2_K, emu.q2_k, ref.q2_k, 2560},
      {DType::kQ3_K, emu.q3_k, ref.q3_k, 256}, {DType::kQ3_K, emu.q3_k, ref.q3_k, 2560},
      {DType::kQ5_K, emu.q5_k, ref.q5_k, 256}, {DType::kQ5_K, emu.q5_k, ref.q5_k, 2560},
      {DType::kIQ4_NL, emu.iq4_nl, ref.iq4_nl, 96}, {DType::kIQ4_NL, emu.iq4_nl, ref.iq4_nl, 800},
      {DType::kIQ4_XS, emu.iq4_xs, ref.iq4_xs, 256}, {DType::kIQ4_XS, emu.iq4_xs, ref.iq4_xs, 2560},
      {DType::kF16, emu.f16, ref.f16, 67},     {DType::kF32, emu.f32, ref.f32, 67},
      {DType::kBF16, emu.bf16, ref.bf16, 67},  {DType::kF16, emu.f16, ref.f16, 611},
      {DType::kBF16, emu.bf16, ref.bf16, 611},
  };
  // (rows, tokens): one token (the 256-bit kernels), a pair and a lone group of 3 tokens,
  // and the GEMM's 32-row panels over more than one block of tokens.
  const int64_t shapes[][2] = {{13, 1}, {13, 3}, {45, 101}};
  for (const Case& c : cases) {
    for (const auto& [n_out, n_tokens] : shapes) {
      const auto w = test::make_weights(c.type, n_out, c.n_in, 5);
      const auto x = test::make_acts(n_tokens, c.n_in, 6);
      const auto a = run(c.emu, w.view, x, n_tokens);
      const auto b = run(c.ref, w.view, x, n_tokens);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << dtype_name(c.type) << " n_in=" << c.n_in << " rows=" << n_out
          << " tokens=" << n_tokens << ": " << a[0] << " vs " << b[0];
      if (!repack_supported(c.type)) continue;
      // The repacked layout: the kernels read it in place instead of interleaving per task.
      const RepackedWeights r(w.view);
      const auto p = run(c.emu, r.view(), x, n_tokens);
      EXPECT_EQ(0, std::memcmp(p.data(), b.data(), p.size() * sizeof(float)))
          << dtype_name(c.type) << " repacked, n_in=" << c.n_in << " rows=" << n_out
          << " tokens=" << n_tokens;
    }
  }
}

}  // namespace
}  // namespace tally::cpu::detail
