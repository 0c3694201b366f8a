// Rotary position embedding. Each rotated pair (x0, x1) of a head becomes
//   (x0*cos - x1*sin, x0*sin + x1*cos),  angle = position * freq[pair]
// computed as llama2.c's run.c does (fp32 angle, cosf/sinf, products then add). Pairs are
//   kAdjacent: (x[2i], x[2i+1])        llama ("normal" rope in llama.cpp)
//   kNeox:     (x[i], x[i + rot/2])    qwen2, GPT-NeoX
// for i < rot_dim/2; dims from rot_dim to head_dim pass through (partial rotary).
//
// The angles are turned into a per-token table once per step (rope_table) and shared by every
// layer and head. All ISA paths give the same bits: no fused multiply-add.
#pragma once

#include <cstdint>

#include "backend/backend_types.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace tally::cpu {

// RopeLayout and RopeShape are the backend interface's types (backend/backend_types.h).
using tally::RopeLayout;
using tally::RopeShape;

// Per token, cos and sin expanded to one entry per rotated element, with the sign folded in
// so that out[j] = x[j]*cos[j] + x[partner(j)]*sin[j]:
//   cos, sin: [n_tokens][rot_dim];  freqs: [rot_dim/2] (radians per position).
void rope_table(const int32_t* positions, int64_t n_tokens, const float* freqs, int64_t rot_dim,
                RopeLayout layout, float* cos, float* sin);

// Rotates one token's heads in place: x: [n_heads][head_dim]; cos, sin: that token's row.
void rope_row(IsaLevel isa, const RopeShape& shape, const float* cos, const float* sin, float* x);

// All tokens in parallel: x: [n_tokens][n_heads][head_dim]; cos, sin: [n_tokens][rot_dim].
void rope(const RopeShape& shape, const float* cos, const float* sin, int64_t n_tokens, float* x,
          ThreadPool& pool);

namespace detail {
void rope_row_avx2(const RopeShape& shape, const float* cos, const float* sin, float* x);
void rope_row_avx512(const RopeShape& shape, const float* cos, const float* sin, float* x);
}  // namespace detail

}  // namespace tally::cpu
