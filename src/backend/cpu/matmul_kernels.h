// Inside the CPU matmul: the per-ISA kernel tables and the one reduction order they share.
//
// Every path (scalar, AVX2, AVX2 + AVX-VNNI, AVX-512 VNNI) computes each dot product in the SAME canonical
// order, so results are bit-identical across paths as well as across batch sizes and thread
// counts. The order is defined by the scalar kernels (matmul_scalar.cpp); in short:
//
//  * Eight float lanes, all starting at +0. Float weights (F32/F16/BF16): element k of the
//    first n_in & ~7 goes to lane k % 8 as lane = fma(w[k], x[k], lane); the lanes are
//    reduced by lanes8_reduce; the last n_in % 8 elements follow one by one with fma.
//  * Quantized weights, against activations quantized per row (matmul_act.cpp): the
//    integer dot of a block is exact, however it is computed.
//    Q8_0 / Q4_0 (32-element blocks): ONE accumulator per (row, token), the blocks in order:
//      acc = +0; for b: acc = fma(w_scale * x_scale, float(int_dot), acc)
//    (one chain per output, so a kernel can hold 8 rows of one token in one vector: the
//    interleaved layout below).
//    Q4_K / Q6_K (256-element super-blocks): super-block b goes to lane b % 8 as
//      lane = fma(w_scale * x_scale, float(int_dot), lane)
//    (Q4_K then also lane = fma(-(w_min_scale * x_scale), float(int_min_dot), lane)),
//    then lanes8_reduce. Lanes that get no block keep their value (vector code must not
//    even add 0 to them: that would turn a -0 into +0).
//    Q5_K / Q2_K follow Q4_K (q4k_lane_update), Q3_K / IQ4_XS follow Q6_K (one fma per
//    super-block).
//    Q4_1 / Q5_0 / Q5_1 / IQ4_NL (32-element blocks; per-row kernels, and on AVX-512 a GEMM
//    for many tokens): block b goes to lane b % 8 as
//      lane = fma(w_scale * x_scale, float(int_dot), lane)       (Q5_0: int_dot of q - 16)
//    and Q4_1 / Q5_1 then lane = fma(w_min * x_scale, float(x_block_sum), lane); then
//    lanes8_reduce.
// Floating point inside these files must never be left to contraction: every multiply-add is
// an explicit fma, and no float product is added except through fma.
#pragma once

#include <cstdint>

#include "backend/cpu/matmul.h"
#include "tensor/quant_blocks.h"

namespace tally::cpu::detail {

inline constexpr int kActBlock = 32;     // activation block for the 32-block weight types
inline constexpr int kActBlockK = 256;   // activation block for K-quant weights
inline constexpr int kActSumGroup = 16;  // K activations keep a sum per 16 values

// Activations in the form the weight type's kernel reads (per token row t):
//   float weights:      x + t * n_in                                   [n_in] f32
//   32-block weights:   q + t * n_in [n_in] int8, d + t * (n_in/32) scales,
//                       sums + t * (n_in/32) sums of q per block, sums8 the same times 8,
//                       minus_8sums / minus_128sums the same times -8 / -128
//   K-quant weights:    q, d + t * (n_in/256) scales, sums + t * (n_in/16) sums per 16
struct MatmulActs {
  const float* x = nullptr;
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int16_t* sums = nullptr;
  int64_t n_tokens = 0;
  const int32_t* sums8 = nullptr;  // 32-block weights: 8 * sums, int32 (Q4_0's q - 8 offset)
  // 32-block weights: the offsets of the 512-bit GEMM's unsigned weight forms, negated, so a
  // block's integer sums start from them (-8 * sums: Q4_0's q; -128 * sums: Q8_0's w + 128).
  const int32_t* minus_8sums = nullptr;
  const int32_t* minus_128sums = nullptr;
};

// sums8, minus_8sums and minus_128sums of n 32-blocks from their int16 sums.
void act_block32_offsets(const int16_t* sums, int64_t n, int32_t* sums8, int32_t* minus_8sums,
                         int32_t* minus_128sums);

// Rows [row_begin, row_end) of w against every token; writes y[t * w.n_out + o].
struct MatmulTile {
  const WeightMatrix* w = nullptr;
  const MatmulActs* acts = nullptr;
  int64_t row_begin = 0;
  int64_t row_end = 0;
  float* y = nullptr;  // [n_tokens][n_out]
};

using MatmulTileFn = void (*)(const MatmulTile& tile);

// Quantizes one activation row (below); each kernel table names the version it uses.
using ActQuantFn = void (*)(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums);

struct MatmulKernels {
  const char* name;
  MatmulTileFn f32, f16, bf16, q8_0, q4_0, q4_k, q6_k;
  MatmulTileFn q4_1, q5_0, q5_1, q2_k, q3_k, q5_k, iq4_nl, iq4_xs;
  ActQuantFn act32, act_k;  // for 32-block and K-quant weights
};

const MatmulKernels& matmul_kernels_scalar();
const MatmulKernels& matmul_kernels_avx2();         // needs AVX2 + FMA + F16C
const MatmulKernels& matmul_kernels_avx2_vnni();    // needs AVX2 + FMA + F16C + AVX-VNNI
const MatmulKernels& matmul_kernels_avx512_vnni();  // needs AVX-512 F/BW/VL + VNNI

// The interleaved layout of Q8_0 / Q4_0 (WeightLayout::kInterleaved8): rows 8g..8g+7 form
// group g, at data + g * 8 * row_bytes, holding exactly the bytes of its 8 rows:
//   [nb][kInterleave * qs_bytes]  quants of block b: chunk j (32 bytes, j < qs_bytes / 4)
//                                 holds bytes 4j..4j+3 of qs of rows 0..7 in row order
//   [nb][kInterleave] f16         the scales d of block b of rows 0..7
// where nb = n_in / 32 and qs_bytes is the block's qs (16 for Q4_0, 32 for Q8_0). So for
// Q8_0 chunk j is elements 4j..4j+3 of each row; for Q4_0 its low nibbles are elements
// 4j..4j+3 and its high nibbles 16+4j..16+4j+3. Rows past n_out in the last group are zeros.
inline constexpr int kInterleave = 8;

// qs bytes of one block of a type with an interleaved layout (0 for other types).
[[gnu::always_inline]] inline int interleaved_qs_bytes(DType type) {
  return type == DType::kQ4_0 ? kQBlock / 2 : type == DType::kQ8_0 ? kQBlock : 0;
}

// Interleaves one group: rows[r] points at a GGUF row (blocks of 2 + qs_bytes bytes) or is
// null for a padding row. dst: 8 * nb * (2 + qs_bytes) bytes. Scalar; the SIMD files have
// their own transposes for the per-task packing, tested against this.
void interleave_group(int qs_bytes, const uint8_t* const* rows, int64_t nb, uint8_t* dst);

// Which activation form a weight type reads.
enum class ActForm { kFloat, kBlock32, kBlockK };
ActForm act_form(DType type);

// Quantizes one activation row. Block of n values: d = amax / 127 (NaNs skipped),
// q = round_nearest_even(x * (1 / d)) clamped to [-127, 127] (NaN gives -127), sums of q per
// block (32-blocks) or per 16 (K-quants). The AVX2 version gives the scalar one's bytes
// exactly (tested), so the int8 values and scales never differ between paths.
void act_quantize_row32(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums);
void act_quantize_row_k(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums);
void act_quantize_row32_avx2(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums);
void act_quantize_row_k_avx2(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums);

// Helpers shared with the SIMD files are always_inline: an out-of-line copy built for AVX2
// must never be the one baseline code links to.

// fma with one rounding; a builtin, so no std:: out-of-line copy either.
[[gnu::always_inline]] inline float fma_f32(float a, float b, float c) {
  return __builtin_fmaf(a, b, c);
}

// The canonical reduction of eight lanes: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
[[gnu::always_inline]] inline float lanes8_reduce(const float* l) {
  const float a0 = l[0] + l[4], a1 = l[1] + l[5], a2 = l[2] + l[6], a3 = l[3] + l[7];
  return (a0 + a2) + (a1 + a3);
}

// Q4_K's two contributions of one super-block to its lane (see the order above).
[[gnu::always_inline]] inline float q4k_lane_update(float lane, float w_d, float w_dmin, float x_d,
                                                    int32_t dot, int32_t min_dot) {
  lane = fma_f32(w_d * x_d, static_cast<float>(dot), lane);
  return fma_f32(-(w_dmin * x_d), static_cast<float>(min_dot), lane);
}

// Q4_1 / Q5_0 / Q5_1's contributions of one 32-block to its lane (w_min 0 and no second fma
// for Q5_0, whose dot already holds the -16 offset).
template <bool kHasMin>
[[gnu::always_inline]] inline float block32_lane_update(float lane, float w_d, float w_m,
                                                        float x_d, int32_t dot, int32_t x_sum) {
  lane = fma_f32(w_d * x_d, static_cast<float>(dot), lane);
  if constexpr (kHasMin) lane = fma_f32(w_m * x_d, static_cast<float>(x_sum), lane);
  return lane;
}

}  // namespace tally::cpu::detail
