// The matmul entry points: checks, activation quantization into per-thread scratch, the
// split over output rows, and the run-time choice of the kernel table.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/matmul_repack.h"
#include "base/check.h"
#include "tensor/quantize.h"

namespace tally::cpu {

namespace {

using detail::ActForm;
using detail::MatmulActs;
using detail::MatmulKernels;
using detail::MatmulTile;
using detail::MatmulTileFn;

// Weight rows per task: a multiple of the kernels' row groups (the AVX-512 GEMM's register
// tile is 32 rows), small enough to spread 256 rows over 8 tasks, large enough that y writes
// of two tasks rarely share a line.
constexpr int64_t kRowChunk = 32;
static_assert(kRowChunk % detail::kInterleave == 0, "tasks must hold whole interleaved groups");

// Up to this many tokens (decode of a batch, verification) a product is bound by its weights
// streaming in from memory: the kernels read a row panel once for all the tokens, so the
// compute per byte stays below what memory feeds.
constexpr int64_t kStreamingTokens = 16;

// Rows per task. With few tokens a product streams its weights from memory once: a few long
// contiguous runs per thread keep the hardware prefetchers on one stream each, where 32-row
// tasks taken in turn would restart them every few kilobytes (and the two threads would
// interleave their requests over one region). Any split over rows gives the same bits.
// (Q8_0/Q4_0 in GGUF's row layout are interleaved per task into scratch: those keep small
// tasks.)
int64_t row_chunk(const WeightMatrix& w, int64_t n_tokens, int n_threads) {
  const bool packs_per_task =
      w.layout == WeightLayout::kRows && detail::interleaved_qs_bytes(w.type) != 0;
  if (n_tokens > kStreamingTokens || n_threads <= 1 || packs_per_task) return kRowChunk;
  const int64_t n_out = w.n_out;
  const int64_t tasks = int64_t{n_threads} * 4;
  const int64_t rows = (n_out + tasks - 1) / tasks;
  return std::max(kRowChunk, (rows + kRowChunk - 1) / kRowChunk * kRowChunk);
}

bool isa_available(IsaLevel level) {
  const CpuFeatures& f = cpu_features();
  switch (level) {
    case IsaLevel::kScalar:
      return true;
    case IsaLevel::kAvx2:
      return cpu_isa_level() >= IsaLevel::kAvx2;
    case IsaLevel::kAvx512:
      return cpu_isa_level() >= IsaLevel::kAvx512 && f.avx512vnni;
  }
  return false;
}

// The AVX2 level takes AVX-VNNI's vpdpbusd where the CPU has it (same bits).
const MatmulKernels& kernels_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::kAvx512:
      return detail::matmul_kernels_avx512_vnni();
    case IsaLevel::kAvx2:
      return cpu_features().avxvnni ? detail::matmul_kernels_avx2_vnni()
                                    : detail::matmul_kernels_avx2();
    case IsaLevel::kScalar:
      break;
  }
  return detail::matmul_kernels_scalar();
}

// Every kernel table this CPU can run, lowest first.
std::vector<const MatmulKernels*> available_kernels() {
  std::vector<const MatmulKernels*> all{&detail::matmul_kernels_scalar()};
  if (isa_available(IsaLevel::kAvx2)) {
    all.push_back(&detail::matmul_kernels_avx2());
    if (cpu_features().avxvnni) all.push_back(&detail::matmul_kernels_avx2_vnni());
  }
  if (isa_available(IsaLevel::kAvx512)) all.push_back(&detail::matmul_kernels_avx512_vnni());
  return all;
}

const MatmulKernels& default_kernels() {
  static const MatmulKernels& k = kernels_for(isa_available(IsaLevel::kAvx512) ? IsaLevel::kAvx512
                                              : isa_available(IsaLevel::kAvx2) ? IsaLevel::kAvx2
                                                                               : IsaLevel::kScalar);
  return k;
}

MatmulTileFn tile_fn(const MatmulKernels& k, DType type) {
  switch (type) {
    case DType::kF32:
      return k.f32;
    case DType::kF16:
      return k.f16;
    case DType::kBF16:
      return k.bf16;
    case DType::kQ8_0:
      return k.q8_0;
    case DType::kQ4_0:
      return k.q4_0;
    case DType::kQ4_K:
      return k.q4_k;
    case DType::kQ6_K:
      return k.q6_k;
    case DType::kQ4_1:
      return k.q4_1;
    case DType::kQ5_0:
      return k.q5_0;
    case DType::kQ5_1:
      return k.q5_1;
    case DType::kQ2_K:
      return k.q2_k;
    case DType::kQ3_K:
      return k.q3_k;
    case DType::kQ5_K:
      return k.q5_k;
    case DType::kIQ4_NL:
      return k.iq4_nl;
    case DType::kIQ4_XS:
      return k.iq4_xs;
    default:
      break;
  }
  TALLY_CHECK(false, "matmul: no kernel for weight type {}", dtype_name(type));
  __builtin_unreachable();
}

// Quantized activation rows of the calling thread: grown to the largest call, never shrunk,
// so steady-state calls allocate nothing.
struct ActScratch {
  std::vector<int8_t> q;       // [n_tokens][n_in]
  std::vector<float> d;        // [n_tokens][n_in / block]
  std::vector<int16_t> sums;   // [n_tokens][n_in / sum group]
  std::vector<int32_t> sums8;  // [n_tokens][n_in / block] (32-blocks only), and below
  std::vector<int32_t> minus_8sums;
  std::vector<int32_t> minus_128sums;
};

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

MatmulActs prepare_acts(const MatmulKernels& kernels, DType type, const float* x, int64_t n_in,
                        int64_t n_tokens, ThreadPool& pool) {
  MatmulActs acts;
  acts.n_tokens = n_tokens;
  const ActForm form = detail::act_form(type);
  if (form == ActForm::kFloat) {
    acts.x = x;
    return acts;
  }
  // One scratch per form, so a group may hold its 32-block and K-block rows at once.
  thread_local ActScratch scratch_by_form[2];
  ActScratch& scratch = scratch_by_form[form == ActForm::kBlockK ? 1 : 0];
  const bool k = form == ActForm::kBlockK;
  const int64_t n_scales = n_in / (k ? detail::kActBlockK : detail::kActBlock);
  const int64_t n_sums = k ? n_in / detail::kActSumGroup : n_scales;
  int8_t* q = grow(scratch.q, n_tokens * n_in);
  float* d = grow(scratch.d, n_tokens * n_scales);
  int16_t* sums = grow(scratch.sums, n_tokens * n_sums);
  int32_t* sums8 = k ? nullptr : grow(scratch.sums8, n_tokens * n_scales);
  int32_t* minus_8sums = k ? nullptr : grow(scratch.minus_8sums, n_tokens * n_scales);
  int32_t* minus_128sums = k ? nullptr : grow(scratch.minus_128sums, n_tokens * n_scales);
  // Each row is quantized on its own, so splitting rows over threads changes nothing.
  pool.parallel_for(n_tokens, 1, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      const float* xt = x + t * n_in;
      (k ? kernels.act_k : kernels.act32)(xt, n_in, q + t * n_in, d + t * n_scales,
                                          sums + t * n_sums);
      if (!k)
        detail::act_block32_offsets(sums + t * n_sums, n_scales, sums8 + t * n_scales,
                                    minus_8sums + t * n_scales, minus_128sums + t * n_scales);
    }
  });
  acts.q = q;
  acts.d = d;
  acts.sums = sums;
  acts.sums8 = sums8;
  acts.minus_8sums = minus_8sums;
  acts.minus_128sums = minus_128sums;
  return acts;
}

void check_shapes(const WeightMatrix& w, int64_t n_tokens) {
  const DTypeTraits& t = dtype_info(w.type);
  TALLY_CHECK(w.n_in > 0 && w.n_out >= 0 && n_tokens >= 0,
              "matmul: bad shape n_in={} n_out={} n_tokens={}", w.n_in, w.n_out, n_tokens);
  TALLY_CHECK(w.n_in % t.block_size == 0, "matmul: n_in={} is not a multiple of {}'s block of {}",
              w.n_in, t.name, t.block_size);
  TALLY_CHECK(w.row_bytes >= dtype_row_bytes(w.type, w.n_in),
              "matmul: row_bytes={} shorter than a row of {} {} values", w.row_bytes, w.n_in,
              t.name);
  TALLY_CHECK(w.layout == WeightLayout::kRows || (detail::interleaved_qs_bytes(w.type) != 0 &&
                                                  w.row_bytes == dtype_row_bytes(w.type, w.n_in)),
              "matmul: {} weights cannot be in the interleaved layout (row_bytes={})", t.name,
              w.row_bytes);
}

// A group's tasks: chunks of row_chunk() rows of each matrix in turn.
struct GroupTask {
  int64_t first_chunk = 0;  // of the whole group
  int64_t n_chunks = 0;
  int64_t chunk_rows = 0;
  MatmulTileFn fn = nullptr;
  const MatmulActs* acts = nullptr;
};

constexpr int kMaxGroup = 4;

// Every product of x: one matrix (matmul) or a group sharing the input (matmul_shared_input).
void run_group(const MatmulKernels& k, std::span<const MatmulOutput> outputs, const float* x,
               int64_t n_tokens, ThreadPool& pool) {
  TALLY_CHECK(!outputs.empty() && outputs.size() <= kMaxGroup, "matmul group of {} products",
              outputs.size());
  const int64_t n_in = outputs[0].w->n_in;
  for (const MatmulOutput& o : outputs) {
    check_shapes(*o.w, n_tokens);
    TALLY_CHECK(o.w->n_in == n_in, "matmul group: n_in {} vs {}", o.w->n_in, n_in);
    tile_fn(k, o.w->type);  // a type without a kernel fails even with no tokens
  }
  if (n_tokens == 0) return;
  MatmulActs acts_by_form[3];  // indexed by ActForm
  bool prepared[3] = {false, false, false};
  GroupTask tasks[kMaxGroup];
  int64_t n_chunks = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const WeightMatrix& w = *outputs[i].w;
    const int f = static_cast<int>(detail::act_form(w.type));
    const int64_t rows = row_chunk(w, n_tokens, pool.n_threads());
    tasks[i] = {n_chunks, (w.n_out + rows - 1) / rows, rows, tile_fn(k, w.type),
                &acts_by_form[f]};
    n_chunks += tasks[i].n_chunks;
    if (!prepared[f] && w.n_out > 0) {
      acts_by_form[f] = prepare_acts(k, w.type, x, n_in, n_tokens, pool);
      prepared[f] = true;
    }
  }
  pool.run(n_chunks, [&](int64_t chunk, int) {
    size_t i = 0;
    while (chunk >= tasks[i].first_chunk + tasks[i].n_chunks) ++i;
    const WeightMatrix& w = *outputs[i].w;
    const int64_t begin = (chunk - tasks[i].first_chunk) * tasks[i].chunk_rows;
    const MatmulTile tile{&w, tasks[i].acts, begin, std::min(begin + tasks[i].chunk_rows, w.n_out),
                          outputs[i].y};
    tasks[i].fn(tile);
  });
}

void run(const MatmulKernels& k, const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
         ThreadPool& pool) {
  const MatmulOutput one{&w, y};
  run_group(k, {&one, 1}, x, n_tokens, pool);
}

}  // namespace

void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                         ThreadPool& pool) {
  run_group(default_kernels(), outputs, x, n_tokens, pool);
}

void matmul_repeat(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                   int64_t n_repeats, ThreadPool& pool) {
  check_shapes(w, n_tokens);
  const MatmulKernels& k = default_kernels();
  const MatmulTileFn fn = tile_fn(k, w.type);
  if (n_tokens == 0 || w.n_out == 0) return;
  const MatmulActs acts = prepare_acts(k, w.type, x, w.n_in, n_tokens, pool);
  pool.parallel_for(w.n_out, kRowChunk, [&](int64_t begin, int64_t end, int) {
    const MatmulTile tile{&w, &acts, begin, end, y};
    for (int64_t r = 0; r < n_repeats; ++r) fn(tile);
  });
}

const char* matmul_path_name() { return default_kernels().name; }

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  run(default_kernels(), w, x, n_tokens, y, pool);
}

bool matmul_with_isa(IsaLevel level, const WeightMatrix& w, const float* x, int64_t n_tokens,
                     float* y, ThreadPool& pool) {
  if (!isa_available(level)) return false;
  run(kernels_for(level), w, x, n_tokens, y, pool);
  return true;
}

std::vector<std::string> matmul_path_names() {
  std::vector<std::string> names;
  for (const MatmulKernels* k : available_kernels()) names.emplace_back(k->name);
  return names;
}

bool matmul_with_path(std::string_view path, const WeightMatrix& w, const float* x,
                      int64_t n_tokens, float* y, ThreadPool& pool) {
  for (const MatmulKernels* k : available_kernels()) {
    if (path != k->name) continue;
    run(*k, w, x, n_tokens, y, pool);
    return true;
  }
  return false;
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  check_shapes(w, n_tokens);
  std::vector<float> row(static_cast<size_t>(w.n_in));  // [n_in]
  std::vector<uint8_t> raw;                             // an interleaved row in row form
  if (w.layout == WeightLayout::kInterleaved8) raw.resize(static_cast<size_t>(w.row_bytes));
  for (int64_t o = 0; o < w.n_out; ++o) {
    const uint8_t* src = w.data + o * w.row_bytes;
    if (w.layout == WeightLayout::kInterleaved8) {
      interleaved_row(w, o, raw.data());
      src = raw.data();
    }
    dequantize_row(w.type, src, row.data(), w.n_in);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.n_in;
      double acc = 0.0;
      for (int64_t k = 0; k < w.n_in; ++k) acc += double(row[k]) * double(xt[k]);
      y[t * w.n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace tally::cpu
