#include "synth/row_producer.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "base/check.h"
#include "synth/synthetic_values.h"
#include "tensor/quantize.h"

namespace tally::synth {

RowProducer::RowProducer(int n_threads, int64_t max_cols)
    : pool_(n_threads),
      max_cols_(max_cols),
      scratch_(static_cast<size_t>(pool_.n_threads()) * static_cast<size_t>(max_cols)) {}

Status RowProducer::produce(DType type, int64_t n_cols, int64_t n_rows, const RowFill& fill,
                            FunctionRef<Status(std::span<const uint8_t>)> emit) {
  TALLY_CHECK(n_cols > 0 && n_cols <= max_cols_, "row of {} values (producer made for {})", n_cols, max_cols_);
  if (!dtype_has_row_conversion(type)) {
    return make_error(ErrorCode::kUnsupported, "synthetic weights: no row conversion to {}", dtype_name(type));
  }
  const int64_t row_bytes = dtype_row_bytes(type, n_cols);
  const int64_t rows_per_chunk = std::clamp<int64_t>(kChunkBytes / row_bytes, 1, n_rows);
  chunk_.resize(static_cast<size_t>(rows_per_chunk * row_bytes));
  // About 64K values per task: big enough to amortize a task, small enough to balance.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / n_cols);
  for (int64_t first = 0; first < n_rows; first += rows_per_chunk) {
    const int64_t n = std::min(rows_per_chunk, n_rows - first);
    pool_.parallel_for(n, grain, [&](int64_t begin, int64_t end, int thread) {
      float* values = scratch_.data() + static_cast<size_t>(thread) * static_cast<size_t>(max_cols_);  // [n_cols]
      for (int64_t r = begin; r < end; ++r) {
        synthetic_fill_row(fill.stream, first + r, fill.mean, fill.std, values, n_cols);
        quantize_row(type, values, chunk_.data() + r * row_bytes, n_cols);
      }
    });
    TALLY_RETURN_IF_ERROR(emit(std::span<const uint8_t>(chunk_.data(), static_cast<size_t>(n * row_bytes))));
  }
  return Status::ok_status();
}

}  // namespace tally::synth
