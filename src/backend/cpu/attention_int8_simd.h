// Int8 scores (attention_int8.h) over an ISA's int8 operations O (attention_int8_avx2.h,
// attention_int8_avx512.h): O::kN positions at once, one score per lane. For each segment the
// positions' K bytes are transposed into O::I vectors whose lane p holds 4 bytes of position
// p, so a broadcast dword of the query feeds all kN positions and no horizontal sum is
// needed: each lane ends with its position's exact integer dot. The K bytes enter as
// unsigned (level + bias) where O's dot wants them so; the bias times the query segment's sum
// is taken off again, exactly. Include only from *_avx2.cpp / *_avx512.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/attention_impl.h"
#include "base/check.h"

namespace tally::cpu {
namespace {

template <class O>
struct Int8Scores {
  static constexpr int kN = O::kN;
  using I = typename O::I;
  using F = typename O::F;

  // Dword j of a query segment.
  static int32_t query_dword(const int8_t* q, int64_t j) {
    int32_t v;
    std::memcpy(&v, q + 4 * j, sizeof v);
    return v;
  }

  // s[g * kAttentionChunk + p] for heads g < NG and positions p < nc (lanes past nc are
  // computed on a repeated row and stored within the chunk's row, never read). K rows are
  // asked for a pass ahead, and each pass's V rows (EV, in v_layer) for the weighted sum: the
  // rows of `prefetch_heads` heads from this one on (adjacent in a slot; 0: none, another
  // head's run asks for them).
  template <class EK, class EV, int NG>
  static void scores(const QueryInt8& qq, const void* k_layer, const void* v_layer,
                     const int64_t* offset, int64_t nc, int64_t hd, int64_t prefetch_heads, float* s) {
    // Segments are whole blocks: a quantized head here is whole blocks (shorter heads are
    // short blocks, attention.cpp gives them the scalar kernels), so segment sg is block sg.
    TALLY_DCHECK(qq.seg == 32, "int8 scores over segments of {}", qq.seg);
    constexpr bool kQ4 = std::is_same_v<EK, KvQ4_0>;
    constexpr int kBias = kQ4 ? 8 : O::kQ8Bias;  // q4_0: the nibble itself is level + 8
    // A head's rows span the same bytes at every position (a slot is whole blocks).
    const int64_t k_bytes = prefetch_heads * EK::bytes(EK::row(k_layer, offset[0]), hd);
    const int64_t v_bytes = prefetch_heads * EV::bytes(EV::row(v_layer, offset[0]), hd);
    for (int64_t p = 0; p < nc && p < kN && k_bytes > 0; ++p)
      prefetch_bytes(EK::addr(EK::row(k_layer, offset[p])), k_bytes);
    for (int64_t p0 = 0; p0 < nc; p0 += kN) {
      typename EK::Row rows[kN];
      for (int i = 0; i < kN; ++i) rows[i] = EK::row(k_layer, offset[p0 + i < nc ? p0 + i : nc - 1]);
      // The pass's K scales of every segment, gathered first: a vector load right after its
      // lanes' scalar stores would wait for them to retire.
      alignas(64) uint16_t dk[QueryInt8::kMaxSegments][kN];
      for (int i = 0; i < kN; ++i)
        for (int64_t sg = 0; sg < qq.n_seg; ++sg) dk[sg][i] = EK::scale_f16(rows[i], sg * qq.seg);
      if (k_bytes > 0) {
        for (int64_t p = p0 + kN; p < nc && p < p0 + 2 * kN; ++p)
          prefetch_bytes(EK::addr(EK::row(k_layer, offset[p])), k_bytes);
        for (int64_t p = p0; p < nc && p < p0 + kN; ++p)
          prefetch_bytes(EV::addr(EV::row(v_layer, offset[p])), v_bytes);
      }
      F acc[NG];  // set by segment 0; zeroed one by one (`= {}` became a rep stos of memory)
      for (int g = 0; g < NG; ++g) acc[g] = O::set1(0.0f);
      for (int64_t sg = 0; sg < qq.n_seg; ++sg) {
        I kt[8];
        O::template load_block<EK>(rows, sg, kt);
        const F dkv = O::load_f16(dk[sg]);
        for (int g = 0; g < NG; ++g) {
          const int8_t* q = qq.q[g] + sg * qq.seg;
          I isum = O::zero_i();
          // A constant trip count: kt stays in registers across the heads.
          for (int j = 0; j < 8; ++j) isum = O::template dot<kBias == 0>(isum, kt[j], query_dword(q, j));
          const F x = O::mul(O::to_f(O::sub_i(isum, kBias * qq.sum[g][sg])), dkv);
          acc[g] = sg == 0 ? O::mul(x, O::set1(qq.e[g][sg])) : O::fmadd(x, O::set1(qq.e[g][sg]), acc[g]);
        }
      }
      for (int g = 0; g < NG; ++g) O::store_f(s + g * kAttentionChunk + p0, acc[g]);
    }
  }
};

}  // namespace
}  // namespace tally::cpu
