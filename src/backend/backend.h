// The operations a model's forward pass asks of a device: one virtual call per op per layer
// and step, never per row or element (the loops over rows, heads and tokens live inside each
// backend). src/model/ calls only this interface; the CPU backend (cpu/cpu_backend.h)
// implements it with the per-ISA kernels; a CUDA backend would implement the same table.
//
// Every op is synchronous: it returns when its outputs are written. Buffers are host pointers
// today (the CPU backend's memory); a device backend adds the buffer side (allocation and
// copies of weights, activations and the KV pool) before it can run these ops.
//
// Promises every backend keeps (docs/DESIGN.md, "Batch invariance"): a row's result depends
// only on that row's inputs, never on n_tokens, the other rows or the thread count; the CPU
// backend also gives the same bits on every ISA path.
//
// Thread rules: a Backend has no mutable state; ops may run concurrently on distinct outputs.
// `pool` is the caller's compute pool: the CPU backend splits each op's rows over it, a
// device backend may use it for host-side work or ignore it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "backend/backend_types.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally {

// A weight matrix copied into a backend's own layout (the CPU backend's interleaved Q8_0 /
// Q4_0), owned by this object; view() is what the ops read. Immutable once made.
class PreparedWeights {
 public:
  virtual ~PreparedWeights() = default;
  virtual const WeightMatrix& view() const = 0;
  virtual int64_t bytes() const = 0;  // memory of its own, for the ledger
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // --- weights, at load time ---
  // Whether prepare_weights() has a layout of its own for matrices of `type`; when false the
  // ops read the GGUF rows in place (layout kRows).
  virtual bool can_prepare(DType type) const = 0;
  // w (layout kRows, can_prepare(w.type)) copied into the backend's layout.
  virtual std::unique_ptr<PreparedWeights> prepare_weights(const WeightMatrix& w) const = 0;
  // The storage types the KV ops accept (f32, f16, bf16, q8_0, q4_0 on the CPU).
  virtual bool kv_type_supported(DType type) const = 0;

  // --- ops of a forward step ---
  // Rows ids[i] of `table` as f32: out [n][table.n_in] (embedding lookup, row gathers).
  virtual void get_rows(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out,
                        ThreadPool& pool) const = 0;
  // y = x · wᵀ. x: [n_tokens][w.n_in], y: [n_tokens][w.n_out].
  virtual void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                      ThreadPool& pool) const = 0;
  // Several products of the same x (Q/K/V, FFN gate and up); each y bit-identical to
  // matmul(*w, x, ...). All w have the same n_in.
  virtual void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x,
                                   int64_t n_tokens, ThreadPool& pool) const = 0;
  // out = w * x / sqrt(mean(x^2) + eps) per row. x, out: [n_rows][n] (out may alias x).
  virtual void rmsnorm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n,
                       float eps, ThreadPool& pool) const = 0;
  // Per-token rope tables: cos, sin [n_tokens][rot_dim]; freqs [rot_dim/2].
  virtual void rope_table(const int32_t* positions, int64_t n_tokens, const float* freqs,
                          int64_t rot_dim, RopeLayout layout, float* cos, float* sin) const = 0;
  // Rotates x [n_tokens][n_heads][head_dim] in place with the tables of rope_table().
  virtual void rope(const RopeShape& shape, const float* cos, const float* sin, int64_t n_tokens,
                    float* x, ThreadPool& pool) const = 0;
  // Stores one step's K and V rows of one layer at their slots, in the pool's storage type,
  // in token order (two tokens naming one slot, a caller's bug, leave the later one's rows).
  virtual void kv_write(const KvWriteArgs& args) const = 0;
  // Causal attention of a ragged batch over the paged KV pool of one layer (optionally over a
  // sliding window, with a score scale and tanh soft-capping: AttentionArgs).
  virtual void attention(const AttentionArgs& args, ThreadPool& pool) const = 0;
  // gate = silu(gate) * up. gate, up: [n_rows][n].
  virtual void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n,
                        ThreadPool& pool) const = 0;
  // gate = gelu_tanh(gate) * up (GeGLU). gate, up: [n_rows][n].
  virtual void gelu_mul(float* gate, const float* up, int64_t n_rows, int64_t n,
                        ThreadPool& pool) const = 0;
  // x = cap * tanh(x / cap) over n elements (Gemma 2's final logit soft-capping), cap > 0.
  virtual void softcap(float* x, float cap, int64_t n, ThreadPool& pool) const = 0;
  // x *= s over n elements (Gemma's embedding scale).
  virtual void scale(float* x, float s, int64_t n, ThreadPool& pool) const = 0;
  // x += y over n elements.
  virtual void add(float* x, const float* y, int64_t n, ThreadPool& pool) const = 0;
  // x[r] += bias for every row: x [n_rows][n], bias [n].
  virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n,
                        ThreadPool& pool) const = 0;
  // acc[rows[i]] += weights[i] * y[i] for i < n_rows (row i itself when rows is null): acc
  // [*][n], y [n_rows][n]; the rows of one call are distinct (MoE: an expert's outputs added
  // to its tokens' sums, one expert after another in a fixed order).
  virtual void add_rows_scaled(float* acc, const float* y, const int32_t* rows, const float* weights,
                               int64_t n_rows, int64_t n, ThreadPool& pool) const = 0;
};

// The backend models run on when none is named: the CPU backend (the only one so far).
const Backend& default_backend();

}  // namespace tally
