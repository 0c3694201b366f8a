// The blocking of the many-token float GEMMs (F32, F16, BF16 weights), shared by the 512-bit
// one (matmul_float_zmm.h) and the 256-bit one (matmul_float_ymm.h); each brings its register
// tile. Tokens go in blocks whose f32 rows stay in L2; per block the tile's rows go in panels,
// and each panel's weights are loaded and widened once per tile of tokens.
//
// A register tile K gives:
//   kPanelRows, kStepRows  rows of the widest tile, then of the narrower one for the rest of
//                          the task's rows; fewer than kStepRows rows left take `narrow`
//   kTokens                tokens of the widest tile; the rest of a block in one narrower tile
//   kTokenBlock            tokens per block
//   block<Rows, T>(rows, x, n, y, n_out)   Rows weight rows (rows[r]) x T tokens (token t's
//                          n inputs at x + t * n) into y[t * n_out + r]
// A block call computes each of its (row, token) outputs whole, over all n inputs in the
// canonical order (matmul_kernels.h), so the blocking never changes a bit.
#pragma once

#include <algorithm>

#include "backend/cpu/matmul_kernels.h"

namespace tally::cpu::detail::simd {
// Internal linkage: compiled into objects with different ISA flags (avx2, avx512, the
// emulated test), and the linker must never pick one copy for all of them.
namespace {

// The `left` tokens after the widest tiles (fewer than K::kTokens) in one tile of their count.
template <class K, int Rows, int T>
[[gnu::always_inline]] static inline void float_tokens_rest(const uint8_t* const* rows,
                                                            const float* x, int64_t n, float* y,
                                                            int64_t n_out, int64_t left) {
  if constexpr (T > 0) {
    if (left == T) return K::template block<Rows, T>(rows, x, n, y, n_out);
    float_tokens_rest<K, Rows, T - 1>(rows, x, n, y, n_out, left);
  }
}

// Tokens [t0, t_end) against the Rows rows from o.
template <class K, int Rows>
void float_panel_tokens(const MatmulTile& tile, int64_t o, int64_t t0, int64_t t_end) {
  const WeightMatrix& w = *tile.w;
  const uint8_t* rows[Rows];
  for (int r = 0; r < Rows; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
  const float* x = tile.acts->x;
  float* y = tile.y + o;
  int64_t t = t0;
  for (; t + K::kTokens <= t_end; t += K::kTokens)
    K::template block<Rows, K::kTokens>(rows, x + t * w.n_in, w.n_in, y + t * w.n_out, w.n_out);
  float_tokens_rest<K, Rows, K::kTokens - 1>(rows, x + t * w.n_in, w.n_in, y + t * w.n_out,
                                             w.n_out, t_end - t);
}

// The tile's rows in panels of K::kPanelRows, then K::kStepRows; rows left after those (and a
// lone token: decode's matvec) take `narrow`, whose bits are the same.
template <class K>
void tile_float_gemm(const MatmulTile& tile, MatmulTileFn narrow) {
  const int64_t n_tokens = tile.acts->n_tokens;
  if (n_tokens < 2) return narrow(tile);
  for (int64_t t0 = 0; t0 < n_tokens; t0 += K::kTokenBlock) {
    const int64_t t_end = std::min(t0 + K::kTokenBlock, n_tokens);
    int64_t o = tile.row_begin;
    for (; o + K::kPanelRows <= tile.row_end; o += K::kPanelRows)
      float_panel_tokens<K, K::kPanelRows>(tile, o, t0, t_end);
    for (; o + K::kStepRows <= tile.row_end; o += K::kStepRows)
      float_panel_tokens<K, K::kStepRows>(tile, o, t0, t_end);
    if (o < tile.row_end) {
      // The last rows for these tokens: a tile of those rows whose y starts at token t0.
      MatmulActs sub = *tile.acts;
      sub.x += t0 * tile.w->n_in;
      sub.n_tokens = t_end - t0;
      narrow(MatmulTile{tile.w, &sub, o, tile.row_end, tile.y + t0 * tile.w->n_out});
    }
  }
}

}  // namespace
}  // namespace tally::cpu::detail::simd
