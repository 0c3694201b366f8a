// Produces the bytes of a synthetic tensor chunk by chunk: rows of seeded values
// (synthetic_values.h) are generated and converted to the tensor's type (quantize_row) on a
// thread pool, into one reusable buffer of about kChunkBytes, which is then handed on (to the
// GGUF writer). Memory stays bounded whatever the model's size. Rows are split over threads,
// each row whole, and every row's values depend only on (stream, row): the bytes are the same
// for any thread count.
//
// Thread rules: one thread at a time calls produce() (it drives the pool).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/function_ref.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally::synth {

struct RowFill {
  uint64_t stream = 0;  // synthetic_stream(seed, tensor name)
  float mean = 0.0f;
  float std = 0.02f;
};

class RowProducer {
 public:
  static constexpr int64_t kChunkBytes = int64_t{4} << 20;

  // n_threads: 0 = one per hardware thread. max_cols: the longest row it will be asked for.
  RowProducer(int n_threads, int64_t max_cols);

  // Emits n_rows rows of n_cols values of `type` (dtype_row_bytes(type, n_cols) bytes each).
  Status produce(DType type, int64_t n_cols, int64_t n_rows, const RowFill& fill,
                 FunctionRef<Status(std::span<const uint8_t>)> emit);

  int n_threads() const { return pool_.n_threads(); }

 private:
  ThreadPool pool_;
  int64_t max_cols_;
  std::vector<float> scratch_;  // [n_threads][max_cols]
  std::vector<uint8_t> chunk_;  // [rows of one chunk][row bytes]
};

}  // namespace tally::synth
