#include "backend/cpu/attention_int8.h"

#include <cmath>

#include "base/check.h"

namespace tally::cpu {

bool attention_int8_scores(const AttentionArgs& args) {
  const DType k = args.kv.k_dtype;
  return (k == DType::kQ8_0 || k == DType::kQ4_0) && args.head_dim % 4 == 0 &&
         args.head_dim <= QueryInt8::kMaxHeadDim;
}

void attention_quantize_query(const float* q, int64_t ng, int64_t head_dim, float divisor, QueryInt8& out) {
  TALLY_DCHECK(ng <= kAttentionGroup && head_dim % 4 == 0 && head_dim <= QueryInt8::kMaxHeadDim,
               "int8 query of {} heads of {}", ng, head_dim);
  out.seg = head_dim < 32 ? head_dim : 32;
  out.n_seg = head_dim / out.seg;
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t s = 0; s < out.n_seg; ++s) {
      const float* x = q + g * head_dim + s * out.seg;
      // Comparisons rather than fmax / fmin / nearbyint: this file has the baseline ISA's
      // flags, where those are library calls (three a value, once a token and head).
      float amax = 0.0f;
      for (int64_t i = 0; i < out.seg; ++i) {
        const float a = std::fabs(x[i]);
        amax = a > amax ? a : amax;  // a NaN leaves amax
      }
      const float d = amax / 127.0f;
      const float id = d > 0.0f ? 1.0f / d : 0.0f;
      int32_t sum = 0;
      for (int64_t i = 0; i < out.seg; ++i) {
        // Clamped first (a NaN becomes -127 rather than an undefined conversion), then rounded
        // to nearest even by adding and taking off 1.5 * 2^23: exact for |r| <= 127.
        float r = x[i] * id;
        r = r > -127.0f ? r : -127.0f;
        r = r < 127.0f ? r : 127.0f;
        r = (r + 0x1.8p23f) - 0x1.8p23f;
        const auto v = static_cast<int32_t>(r);
        out.q[g][s * out.seg + i] = static_cast<int8_t>(v);
        sum += v;
      }
      out.d[g][s] = d;
      out.e[g][s] = d / divisor;
      out.sum[g][s] = sum;
    }
}

}  // namespace tally::cpu
