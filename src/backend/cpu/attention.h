// Causal self-attention over a paged KV cache, for a ragged batch of query tokens.
//
// Each token t (of sequence seq_index[t], at position positions[t]) attends to its own
// sequence's positions 0..positions[t], whose K/V rows are found through the sequence's block
// table: position p lives in slot block_table[p / block_size] * block_size + p % block_size.
//
// Per (token, query head): scores q.k / sqrt(head_dim), then an online softmax that walks the
// positions in order, in fixed chunks of kAttentionChunk positions (independent of the block
// size), rescaling the running sum when the running max grows. A token's result therefore
// depends only on its query and its sequence's K/V, never on the batch around it, the block
// size or the thread count. Query heads that share a KV head (GQA) are processed together so
// each K/V row is read once per group (per kAttentionGroup query heads).
//
// K/V may be stored as f32, f16 or bf16 (PagedKvLayer::dtype); 16-bit values are widened to f32
// as they are loaded, and the arithmetic is then exactly the f32 path's: attention over an
// f16/bf16 cache gives the bits of attention over an f32 cache holding the widened values.
#pragma once

#include <cstdint>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally::cpu {

inline constexpr int64_t kAttentionChunk = 64;
inline constexpr int64_t kAttentionGroup = 8;

// Physical block ids of one sequence, in logical order.
struct BlockTableView {
  const int32_t* ids = nullptr;
  int64_t size = 0;
};

// One layer of the KV pool: K and V each [n_blocks][block_size][n_kv_heads][head_dim] of
// dtype (f32, f16 or bf16: kv_row.h).
struct PagedKvLayer {
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t block_size = 0;
  DType dtype = DType::kF32;
};

struct AttentionArgs {
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // divides n_heads
  int64_t head_dim = 0;
  const float* q = nullptr;                   // [n_tokens][n_heads][head_dim]
  float* out = nullptr;                       // [n_tokens][n_heads][head_dim], not aliasing q
  const int32_t* positions = nullptr;         // [n_tokens]
  const int32_t* seq_index = nullptr;         // [n_tokens]
  const BlockTableView* block_tables = nullptr;  // [n_seqs], long enough for every position
  PagedKvLayer kv;
};

// All (token, KV head) tasks over the pool with the CPU's best path.
void attention(const AttentionArgs& args, ThreadPool& pool);
// One token's query heads of one KV head group, through the given ISA path.
void attention_task(IsaLevel isa, const AttentionArgs& args, int64_t token, int64_t kv_head);

namespace detail {
void attention_task_avx2(const AttentionArgs& args, int64_t token, int64_t kv_head);
void attention_task_avx512(const AttentionArgs& args, int64_t token, int64_t kv_head);
}  // namespace detail

}  // namespace tally::cpu
