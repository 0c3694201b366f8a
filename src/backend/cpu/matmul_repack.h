// Q8_0 and Q4_0 weights in the kernels' own layout, made once at load time: rows interleaved
// in groups of 8 so that one 32-byte vector holds 4 consecutive quants of each of 8 rows, and
// the integer dot products need no horizontal sums (matmul_kernels.h gives the byte layout).
// It holds exactly the bytes of the GGUF rows (the last group padded with zero rows), so a
// decode step reads as much as before.
//
// matmul() accepts both layouts and gives the same bits for either: rows in GGUF's layout are
// interleaved per task on the fly, which costs little when many tokens share each weight
// (prefill) and more for one token (decode), which is what repacking at load time saves.
// The repacked copy is memory of its own: the ledger counts it (RepackedWeights::bytes()).
#pragma once

#include <cstdint>

#include "backend/cpu/matmul.h"
#include "base/huge_page_buffer.h"
#include "base/thread_pool.h"

namespace tally::cpu {

// Whether `type` has an interleaved layout (Q8_0 and Q4_0).
bool repack_supported(DType type);

// Bytes of w in the interleaved layout (ceil(n_out / 8) groups of 8 rows); 0 when
// repack_supported(w.type) is false.
int64_t repacked_bytes(const WeightMatrix& w);

// An owned, interleaved copy of a matrix in GGUF's row layout.
// Thread rules: immutable after construction; view() may be used from any thread.
class RepackedWeights {
 public:
  RepackedWeights() = default;
  // w: layout kRows, repack_supported(w.type) (checked). Groups are split over the pool, or
  // interleaved on the calling thread without one.
  RepackedWeights(const WeightMatrix& w, ThreadPool& pool);
  explicit RepackedWeights(const WeightMatrix& w);
  RepackedWeights(RepackedWeights&&) noexcept = default;
  RepackedWeights& operator=(RepackedWeights&&) noexcept = default;
  RepackedWeights(const RepackedWeights&) = delete;  // megabytes: copying is never intended
  RepackedWeights& operator=(const RepackedWeights&) = delete;

  // The matrix for matmul(): layout kInterleaved8, data in this object.
  const WeightMatrix& view() const { return view_; }
  int64_t bytes() const { return bytes_; }

 private:
  void fill(const WeightMatrix& w, int64_t g_begin, int64_t g_end);
  HugePageBuffer data_;
  WeightMatrix view_;
  int64_t bytes_ = 0;
};

// Row o of an interleaved matrix back in GGUF's row form: dtype_row_bytes(w.type, w.n_in)
// bytes into `row` (tests, and the scalar kernels, which read rows).
void interleaved_row(const WeightMatrix& w, int64_t o, uint8_t* row);

}  // namespace tally::cpu
