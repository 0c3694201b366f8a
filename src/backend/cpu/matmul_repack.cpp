// The interleaved layout of Q8_0 / Q4_0 (matmul_kernels.h): the scalar interleave used at
// load time, and its inverse.
#include "backend/cpu/matmul_repack.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "base/check.h"

namespace tally::cpu {

namespace detail {

void interleave_group(int qs_bytes, const uint8_t* const* rows, int64_t nb, uint8_t* dst) {
  const int block_bytes = 2 + qs_bytes;
  const int quant_bytes = kInterleave * qs_bytes;  // per block, all 8 rows
  uint8_t* scales = dst + nb * quant_bytes;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* q = dst + b * quant_bytes;
    for (int r = 0; r < kInterleave; ++r) {
      const uint8_t* blk = rows[r] ? rows[r] + b * block_bytes : nullptr;
      uint8_t* d = scales + (b * kInterleave + r) * 2;
      if (blk == nullptr) {
        std::memset(d, 0, 2);
        for (int j = 0; j < qs_bytes / 4; ++j) std::memset(q + 32 * j + 4 * r, 0, 4);
        continue;
      }
      std::memcpy(d, blk, 2);
      for (int j = 0; j < qs_bytes / 4; ++j) std::memcpy(q + 32 * j + 4 * r, blk + 2 + 4 * j, 4);
    }
  }
}

}  // namespace detail

bool repack_supported(DType type) { return detail::interleaved_qs_bytes(type) != 0; }

int64_t repacked_bytes(const WeightMatrix& w) {
  if (!repack_supported(w.type)) return 0;
  const int64_t groups = (w.n_out + detail::kInterleave - 1) / detail::kInterleave;
  return groups * detail::kInterleave * dtype_row_bytes(w.type, w.n_in);
}

namespace {

int64_t n_groups(const WeightMatrix& w) {
  return (w.n_out + detail::kInterleave - 1) / detail::kInterleave;
}

}  // namespace

RepackedWeights::RepackedWeights(const WeightMatrix& w) { fill(w, 0, -1); }

RepackedWeights::RepackedWeights(const WeightMatrix& w, ThreadPool& pool) {
  fill(w, 0, 0);  // allocates and sets the view; the pool interleaves
  pool.parallel_for(n_groups(w), 16, [&](int64_t begin, int64_t end, int) { fill(w, begin, end); });
}

// Allocates (when g_begin == 0 and nothing is allocated yet) and interleaves groups
// [g_begin, g_end); g_end < 0 means all of them.
void RepackedWeights::fill(const WeightMatrix& w, int64_t g_begin, int64_t g_end) {
  if (data_.data() == nullptr) {
    TALLY_CHECK(w.layout == WeightLayout::kRows && repack_supported(w.type),
                "repack: needs a {} matrix in row layout", dtype_name(w.type));
    TALLY_CHECK(w.n_in % kQBlock == 0 && w.row_bytes >= dtype_row_bytes(w.type, w.n_in),
                "repack: n_in={} row_bytes={} do not fit {}", w.n_in, w.row_bytes,
                dtype_name(w.type));
    bytes_ = repacked_bytes(w);
    // Decode streams these bytes once per token: on huge pages (base/huge_page_buffer.h).
    // Every byte is written below (padding rows as zeros), by the pool's threads.
    data_ = HugePageBuffer(static_cast<size_t>(bytes_), HugePageBuffer::Commit::kOnFirstWrite);
    view_ = w;
    view_.data = reinterpret_cast<const uint8_t*>(data_.data());
    view_.row_bytes = dtype_row_bytes(w.type, w.n_in);
    view_.layout = WeightLayout::kInterleaved8;
  }
  if (g_end < 0) g_end = n_groups(w);
  const int qs = detail::interleaved_qs_bytes(w.type);
  const int64_t nb = w.n_in / kQBlock;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const uint8_t* rows[detail::kInterleave];
    for (int r = 0; r < detail::kInterleave; ++r) {
      const int64_t o = g * detail::kInterleave + r;
      rows[r] = o < w.n_out ? w.data + o * w.row_bytes : nullptr;
    }
    uint8_t* group =
        reinterpret_cast<uint8_t*>(data_.data()) + g * detail::kInterleave * view_.row_bytes;
    detail::interleave_group(qs, rows, nb, group);
  }
}

void interleaved_row(const WeightMatrix& w, int64_t o, uint8_t* row) {
  TALLY_CHECK(
      w.layout == WeightLayout::kInterleaved8 && repack_supported(w.type) && o >= 0 && o < w.n_out,
      "interleaved_row: row {} of a {} matrix of {} rows", o, dtype_name(w.type), w.n_out);
  const int qs = detail::interleaved_qs_bytes(w.type);
  const int64_t nb = w.n_in / kQBlock;
  const int r = static_cast<int>(o % detail::kInterleave);
  const uint8_t* group = w.data + (o / detail::kInterleave) * detail::kInterleave * w.row_bytes;
  const uint8_t* scales = group + nb * detail::kInterleave * qs;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = row + b * (2 + qs);
    std::memcpy(blk, scales + (b * detail::kInterleave + r) * 2, 2);
    const uint8_t* q = group + b * detail::kInterleave * qs;
    for (int j = 0; j < qs / 4; ++j) std::memcpy(blk + 2 + 4 * j, q + 32 * j + 4 * r, 4);
  }
}

}  // namespace tally::cpu
