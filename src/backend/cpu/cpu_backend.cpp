// A thin layer: each op forwards to the kernel entry point of the same name, so the bits are
// those of the kernels (tests/ops checks them against their scalar references).
#include "backend/cpu/cpu_backend.h"

#include <cstddef>

#include "backend/cpu/attention.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/kv_row.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_repack.h"
#include "backend/cpu/rmsnorm.h"
#include "backend/cpu/rope.h"
#include "base/check.h"
#include "tensor/kv_types.h"
#include "tensor/quantize.h"

namespace tally::cpu {

namespace {

class CpuPreparedWeights final : public PreparedWeights {
 public:
  explicit CpuPreparedWeights(const WeightMatrix& w) : repacked_(w) {}
  const WeightMatrix& view() const override { return repacked_.view(); }
  int64_t bytes() const override { return repacked_.bytes(); }

 private:
  RepackedWeights repacked_;
};

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  bool can_prepare(DType type) const override { return repack_supported(type); }
  std::unique_ptr<PreparedWeights> prepare_weights(const WeightMatrix& w) const override {
    return std::make_unique<CpuPreparedWeights>(w);
  }
  bool kv_type_supported(DType type) const override { return cpu::kv_type_supported(type); }

  void get_rows(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out,
                ThreadPool& pool) const override {
    TALLY_DCHECK(table.layout == WeightLayout::kRows, "get_rows: {} rows in a packed layout", n);
    pool.parallel_for(n, 16, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i)
        dequantize_row(table.type, table.data + ids[i] * table.row_bytes, out + i * table.n_in,
                       table.n_in);
    });
  }
  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
              ThreadPool& pool) const override {
    cpu::matmul(w, x, n_tokens, y, pool);
  }
  void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                           ThreadPool& pool) const override {
    cpu::matmul_shared_input(outputs, x, n_tokens, pool);
  }
  void rmsnorm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n, float eps,
               ThreadPool& pool) const override {
    cpu::rmsnorm(x, w, out, n_rows, n, eps, pool);
  }
  void rope_table(const int32_t* positions, int64_t n_tokens, const float* freqs, int64_t rot_dim,
                  RopeLayout layout, float* cos, float* sin) const override {
    cpu::rope_table(positions, n_tokens, freqs, rot_dim, layout, cos, sin);
  }
  void rope(const RopeShape& shape, const float* cos, const float* sin, int64_t n_tokens, float* x,
            ThreadPool& pool) const override {
    cpu::rope(shape, cos, sin, n_tokens, x, pool);
  }
  // Serial on purpose: two tokens naming the same slot (a caller's bug) must not race.
  void kv_write(const KvWriteArgs& a) const override {
    const int64_t row = a.n_kv_heads * a.head_dim;
    const int64_t k_slot_bytes = kv_row_bytes(a.k_dtype, a.n_kv_heads, a.head_dim);
    const int64_t v_slot_bytes = kv_row_bytes(a.v_dtype, a.n_kv_heads, a.head_dim);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      kv_row_store(a.k_dtype, a.k_rows + t * row,
                   static_cast<std::byte*>(a.k) + a.slots[t] * k_slot_bytes, row, a.head_dim);
      kv_row_store(a.v_dtype, a.v_rows + t * row,
                   static_cast<std::byte*>(a.v) + a.slots[t] * v_slot_bytes, row, a.head_dim);
    }
  }
  void attention(const AttentionArgs& args, ThreadPool& pool) const override {
    cpu::attention(args, pool);
  }
  void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n,
                ThreadPool& pool) const override {
    cpu::silu_mul(gate, up, n_rows, n, pool);
  }
  void gelu_mul(float* gate, const float* up, int64_t n_rows, int64_t n,
                ThreadPool& pool) const override {
    cpu::gelu_mul(gate, up, n_rows, n, pool);
  }
  void softcap(float* x, float cap, int64_t n, ThreadPool& pool) const override {
    cpu::softcap(x, cap, n, pool);
  }
  void scale(float* x, float s, int64_t n, ThreadPool& pool) const override { cpu::scale(x, s, n, pool); }
  void add(float* x, const float* y, int64_t n, ThreadPool& pool) const override {
    cpu::add(x, y, n, pool);
  }
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n,
                ThreadPool& pool) const override {
    cpu::add_bias(x, bias, n_rows, n, pool);
  }
  void add_rows_scaled(float* acc, const float* y, const int32_t* rows, const float* weights, int64_t n_rows,
                       int64_t n, ThreadPool& pool) const override {
    cpu::add_rows_scaled(acc, y, rows, weights, n_rows, n, pool);
  }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend{};
  return backend;
}

}  // namespace tally::cpu
