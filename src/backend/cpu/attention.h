// Causal self-attention over a paged KV cache, for a ragged batch of query tokens.
//
// Each token t (of sequence seq_index[t], at position positions[t]) attends to its own
// sequence's positions 0..positions[t], whose K/V rows are found through the sequence's block
// table: position p lives in slot block_table[p / block_size] * block_size + p % block_size.
//
// Per (token, query head): scores q.k / sqrt(head_dim) (or / score_divisor, then soft-capped
// when AttentionArgs asks), over the last `window` positions when a window is set (Gemma's
// sliding-window layers), then an online softmax that walks the
// positions in order, in fixed chunks of kAttentionChunk positions (independent of the block
// size), rescaling the running sum when the running max grows. A token's result therefore
// depends only on its query and its sequence's K/V, never on the batch around it, the block
// size or the thread count. Query heads that share a KV head (GQA) are processed together so
// each K/V row is read once per group (per kAttentionGroup query heads), and on the SIMD
// paths the heads of several tokens of one sequence (a prefill) share each read too.
//
// K and V may each be stored as f32, f16, bf16, q8_0 or q4_0 (PagedKvLayer::k_dtype, v_dtype);
// 16-bit values are widened and quantized blocks dequantized to f32 as they are loaded, and the
// arithmetic is then exactly the f32 path's: attention over such a cache gives the bits of
// attention over an f32 cache holding the widened (dequantized) values. Except for the scores
// against a q8_0 / q4_0 K: those are int8 dots of a quantized query (attention_int8.h), run
// token by token (not in tiles), all of a token's KV heads side by side when there are tokens
// enough for the threads; the scores are the same bits on every ISA path.
// Heads under 32 values of q8_0 / q4_0 (one short block each, tensor/kv_types.h: tiny models)
// take the scalar kernels on every ISA path.
#pragma once

#include <cstdint>

#include "backend/backend_types.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally::cpu {

inline constexpr int64_t kAttentionChunk = 64;
inline constexpr int64_t kAttentionGroup = 8;

// The arguments (block tables, one layer of the KV pool: K and V each
// [n_blocks][block_size][n_kv_heads][head_dim] of a KV type (kv_row.h)) are the backend
// interface's types (backend/backend_types.h).
using tally::AttentionArgs;
using tally::BlockTableView;
using tally::PagedKvLayer;

// All (token, KV head) tasks over the pool with the CPU's best path.
void attention(const AttentionArgs& args, ThreadPool& pool);
// One token's query heads of one KV head group, through the given ISA path.
void attention_task(IsaLevel isa, const AttentionArgs& args, int64_t token, int64_t kv_head);
// Every KV head group of one token, their chunks side by side where K is int8-scored (the
// heads' rows of a position share cache lines): each head gets exactly attention_task's bits.
void attention_token_task(IsaLevel isa, const AttentionArgs& args, int64_t token);
// Tokens [token_begin, token_begin + n_tokens) of one KV head group: runs of tokens of one
// sequence go through the SIMD paths' tiled kernel (attention_tile.h: several tokens' heads
// share every K/V load) where it applies, else token by token. Each token gets exactly the
// bits attention_task gives it.
void attention_tile_task(IsaLevel isa, const AttentionArgs& args, int64_t token_begin,
                         int64_t n_tokens, int64_t kv_head);
// How many tokens of a sequence one tile of the ISA path takes (1 on the scalar path).
int64_t attention_tile_tokens(IsaLevel isa, int64_t n_rep);

namespace detail {
void attention_token_task_avx2(const AttentionArgs& args, int64_t token);
void attention_token_task_avxvnni(const AttentionArgs& args, int64_t token);
void attention_token_task_avx512(const AttentionArgs& args, int64_t token);
void attention_task_avx2(const AttentionArgs& args, int64_t token, int64_t kv_head);
void attention_task_avx512(const AttentionArgs& args, int64_t token, int64_t kv_head);
// The AVX2 path with AVX-VNNI's vpdpbusd for the int8 scores: only for int8-scored K
// (attention_int8.h), on CPUs with AVX-VNNI.
void attention_task_avxvnni(const AttentionArgs& args, int64_t token, int64_t kv_head);
void attention_tile_avx2(const AttentionArgs& args, int64_t token_begin, int64_t n_tokens,
                         int64_t kv_head);
void attention_tile_avx512(const AttentionArgs& args, int64_t token_begin, int64_t n_tokens,
                           int64_t kv_head);
}  // namespace detail

}  // namespace tally::cpu
