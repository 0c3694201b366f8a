// Matrix products of a weight matrix (any computable dtype, in the GGUF layout) with f32
// activations: the bulk of every forward pass.
//
//   y[t][o] = sum_k W[o][k] * x[t][k]      W: [n_out][n_in]  x: [n_tokens][n_in]  y:
//   [n_tokens][n_out]
//
// Promise (batch invariance): y[t][o] depends only on W[o] and x[t], bit for bit — not on
// n_tokens, the other rows of x, the thread count or the ISA path chosen for the *other*
// rows. Work is split over output rows only; each dot product reduces in one fixed order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend_types.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace tally::cpu {

// WeightMatrix and its layouts (kRows: GGUF's rows in place; kInterleaved8: matmul_repack.h)
// are the backend interface's types (backend/backend_types.h).
using tally::WeightLayout;
using tally::WeightMatrix;

// y = x · Wᵀ over the pool. x: [n_tokens][n_in], y: [n_tokens][n_out] (contiguous).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One product of a group that shares its input (backend/backend_types.h).
using tally::MatmulOutput;

// Several products of the same activations (Q/K/V of a layer, FFN gate and up): x is
// quantized once per activation form, and one split over the rows of all the matrices keeps
// every thread busy with a single hand-off. Each y is bit-identical to matmul(*w, x, ...).
// All w must have the same n_in.
void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                         ThreadPool& pool);

// Every ISA path gives the same bits as the scalar one (matmul_kernels.h defines the order),
// so results also do not depend on the machine, only on the inputs.
//
// Weight types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_NL, IQ4_XS (n_in a multiple of the block size). For the quantized ones each activation row is first
// quantized to int8 (per row, blocks of 32 for the 32-block types, of 256 for the K-quants) and the dot products are integer; so y differs
// from the exact product by at most sum_k |W[o][k]| * amax(x block of k) / 254 (plus f32
// rounding). Scratch for the quantized rows is kept per calling thread and only grows.

// The path matmul() takes on this CPU: "scalar", "avx2", "avx2-vnni" (AVX2 with AVX-VNNI's
// 256-bit vpdpbusd) or "avx512-vnni".
const char* matmul_path_name();

// matmul() on the path of one ISA level (kAvx512 means AVX-512 with VNNI; kAvx2 takes
// AVX-VNNI where the CPU has it). Returns false, computing nothing, when this CPU (or
// TALLY_ISA) does not allow that path. For tests and benchmarks.
bool matmul_with_isa(IsaLevel level, const WeightMatrix& w, const float* x, int64_t n_tokens,
                     float* y, ThreadPool& pool);

// Every path this CPU (and TALLY_ISA) allows, by name as matmul_path_name() gives them,
// "scalar" first; and matmul() on one of them by name (false, computing nothing, for a path
// not in the list). For tests: plain "avx2" stays testable on a CPU with AVX-VNNI.
std::vector<std::string> matmul_path_names();
bool matmul_with_path(std::string_view path, const WeightMatrix& w, const float* x,
                      int64_t n_tokens, float* y, ThreadPool& pool);

// The kernels' inner loop alone, for measuring their peak rate: x is quantized once, then
// each task of rows runs its product n_repeats times in a row (no barrier in between), so a
// weight panel small enough for the caches is read from them. y as matmul()'s.
void matmul_repeat(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                   int64_t n_repeats, ThreadPool& pool);

// Scalar reference (dequantize row, then dot in double): what the fast paths are tested
// against. Single-threaded, slow, for tests only.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

}  // namespace tally::cpu
