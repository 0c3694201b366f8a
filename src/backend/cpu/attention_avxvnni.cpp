// The int8 scores of attention (attention_int8.h) with AVX-VNNI's 256-bit vpdpbusd, for CPUs
// whose level is AVX2 and that have it (Alder Lake, Zen 5 under TALLY_ISA=avx2): the AVX2
// path in every other step, and the same bits (the integer sums are exact). Built with AVX2,
// FMA, F16C and AVX-VNNI flags; called only for int8-scored K after run-time dispatch.
#include "backend/cpu/simd_half_avx2.h"
#include "backend/cpu/attention_int8_avx2.h"
#include "backend/cpu/attention_simd.h"

namespace tally::cpu::detail {

namespace {

// vpdpbusd: unsigned K bytes times the signed query, straight into int32 (no saturation).
struct VexDpbusdDot {
  static constexpr int kQ8Bias = 128;
  template <bool kSigned>
  static __m256i dot(__m256i acc, __m256i k, __m256i qv) {
    static_assert(!kSigned, "K enters with a bias here");
    return _mm256_dpbusd_avx_epi32(acc, k, qv);
  }
};

using Kernels = SimdKernels<Avx2Half, Int8OpsYmm<VexDpbusdDot>>;

}  // namespace

void attention_task_avxvnni(const AttentionArgs& args, int64_t token, int64_t kv_head) {
  attention_task_impl<Kernels>(args, token, kv_head);
}

void attention_token_task_avxvnni(const AttentionArgs& args, int64_t token) {
  attention_token_impl<Kernels>(args, token);
}

}  // namespace tally::cpu::detail
