// The plain data the forward pass hands a backend (backend.h): weight matrices, rope shapes,
// the paged KV layout and the arguments of attention and of KV writes. No behaviour here, and
// nothing that names a device: every backend reads these same structs.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tally {

// How a weight matrix's bytes are laid out.
//   kRows          row o holds n_in elements of `type` at data + o * row_bytes (GGUF's layout,
//                  viewed in place, e.g. in the mmap)
//   kInterleaved8  Q8_0 / Q4_0 rows repacked in groups of 8 by the CPU backend
//                  (cpu/matmul_repack.h): same bytes per row; row_bytes is one row's
//                  dtype_row_bytes
enum class WeightLayout : uint8_t { kRows, kInterleaved8 };

struct WeightMatrix {
  DType type = DType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const uint8_t* data = nullptr;
  int64_t row_bytes = 0;
  WeightLayout layout = WeightLayout::kRows;
};

// One product of a group that shares its input: y = x · wᵀ, y: [n_tokens][w->n_out].
struct MatmulOutput {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
};

// Which elements of a head rope rotates together:
//   kAdjacent: (x[2i], x[2i+1])        llama ("normal" rope in llama.cpp)
//   kNeox:     (x[i], x[i + rot/2])    qwen2, GPT-NeoX
enum class RopeLayout { kAdjacent, kNeox };

struct RopeShape {
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t rot_dim = 0;  // even, <= head_dim
  RopeLayout layout = RopeLayout::kAdjacent;
};

// Physical block ids of one sequence, in logical order.
struct BlockTableView {
  const int32_t* ids = nullptr;
  int64_t size = 0;
};

// One layer of the KV pool: K and V each [n_blocks][block_size][n_kv_heads][head_dim] of
// k_dtype / v_dtype (f32, f16, bf16, or q8_0 / q4_0 blocks along each slot's row: of 32
// values, or one a head under 32 values; tensor/kv_types.h).
struct PagedKvLayer {
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t block_size = 0;
  DType k_dtype = DType::kF32;  // a KV type (tensor/kv_types.h)
  DType v_dtype = DType::kF32;
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
  // A token at position p sees positions max(0, p - window + 1)..p; 0: all of 0..p.
  int64_t window = 0;
  // Scores are q.k / score_divisor (Gemma: sqrt(query_pre_attn_scalar)); 0: sqrt(head_dim).
  float score_divisor = 0.0f;
  // Scores become softcap * tanh(score / softcap) before the softmax (Gemma 2); 0: none.
  float softcap = 0.0f;
};

// One step's K and V rows stored into one layer of the KV pool, each at its token's slot.
struct KvWriteArgs {
  void* k = nullptr;  // the layer's K: [n_slots][n_kv_heads][head_dim] of k_dtype
  void* v = nullptr;  // the layer's V: [n_slots][n_kv_heads][head_dim] of v_dtype
  DType k_dtype = DType::kF32;
  DType v_dtype = DType::kF32;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;             // a slot's row: n_kv_heads * head_dim elements
  int64_t n_tokens = 0;
  const int64_t* slots = nullptr;   // [n_tokens], < n_slots; written in token order
  const float* k_rows = nullptr;    // [n_tokens][n_kv_heads * head_dim]
  const float* v_rows = nullptr;    // [n_tokens][n_kv_heads * head_dim]
};

}  // namespace tally
