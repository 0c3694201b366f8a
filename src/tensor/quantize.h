// Row conversions between f32 and the computable element types (F32, F16, BF16, Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS). A row is n elements; n
// must be a multiple of the type's block size.
//
// F16 / BF16 round to nearest even. Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 round exactly as ggml's
// quantize_row_*_ref, which llama-quantize uses without an importance matrix, so their bytes
// are llama.cpp's (tests/unit/tensor/quantize_ggml_test.cpp):
//   Q8_0  d = amax/127, q = roundf(x/d) (half away from zero)
//   Q4_0  d = extreme/-8 (the signed value of largest magnitude, first on ties), q =
//         min(15, trunc(x/d + 8.5)); Q5_0 the same with -16, 16.5 and 31
//   Q4_1  d = (max-min)/15, m = min, q = min(15, trunc((x-min)/d + 0.5)); Q5_1 with 31
//   (x/d is x times the f32 inverse of the f32 d; d and m are then stored as f16)
// The K-quants and i-quants are reference quality, not llama.cpp's search: each scale is
// chosen so that every value of its block lies in the representable range (nothing is
// clamped), then values are rounded to the nearest level with the stored (f16-rounded)
// scales, so the error of each value is at most half a step:
//   Q4_K  per 32 sub-block: covers [min(0, lo) , hi] with 15 steps (plus the 6-bit rounding
//         of the scale and min, which only widens the step)
//   Q6_K  per 16 sub-block: symmetric, 31 steps each side of zero
//   Q5_K  as Q4_K with 31 steps
//   Q3_K  per 16 sub-block: symmetric, 3 steps each side of zero (level -4 unused)
//   Q2_K  per 16 sub-block: as Q4_K with 3 steps and 4-bit scales and mins
//   IQ4_NL, IQ4_XS  nearest grid value; the extreme maps to -127 (a whole grid gap on the
//         far side, which may clamp at +113): IQ4_XS per 32 sub-block, 6-bit signed scales
// No search minimizes squared error (ggml's K-quant quantizers do); docs/quantization.md
// gives each type's RMSE.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tally {

// dst: [n] floats. src: n elements of `type`.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

// dst: dtype_row_bytes(type, n) bytes.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// The quantizer of `tally quantize`: for the K-quants and i-quants an error-minimising scale
// search (quantize_search.cpp) that minimises sum_i w_i (x_i - q_i)^2 per block, with
// w_i = importance[i] * sqrt(sigma2 + x_i^2) when `importance` ([n], the importance matrix's
// mean squared activation of each column) is given and w_i = sqrt(sigma2) + |x_i| without it
// (sigma2: the block's mean square). Q4_0 / Q4_1 / Q5_0 / Q5_1 search only with importance;
// without it, and for every other type, this is quantize_row (byte-identical to ggml).
void quantize_row_weighted(DType type, const float* src, void* dst, int64_t n, const float* importance);

// n values as blocks of block_values values each: for q8_0 / q4_0 block_values may be any
// divisor of 32 (even for q4_0), fewer than 32 making the short blocks of quant_blocks.h (the
// KV cache's heads under 32 values), rounded exactly as quantize_row rounds a block of 32;
// dst / src: n / block_values blocks of q8_0_block_bytes / q4_0_block_bytes(block_values).
// Otherwise (and for 32) these are quantize_row / dequantize_row. n is a multiple of
// block_values.
void quantize_row_blocks(DType type, const float* src, void* dst, int64_t n, int64_t block_values);
void dequantize_row_blocks(DType type, const void* src, float* dst, int64_t n, int64_t block_values);
// Bytes of n values of `type` in blocks of block_values (as quantize_row_blocks writes them).
int64_t row_blocks_bytes(DType type, int64_t n, int64_t block_values);
// Whether the above take `type` in blocks of block_values: its own block size (a type with row
// conversions), or for q8_0 / q4_0 a divisor of 32 (even for q4_0: a byte holds two values).
bool quant_block_values_valid(DType type, int64_t block_values);

// Whether dequantize_row / quantize_row handle `type`.
bool dtype_has_row_conversion(DType type);

}  // namespace tally
