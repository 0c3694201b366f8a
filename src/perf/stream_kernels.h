// STREAM-style kernels behind measure_memory_bandwidth, one set per ISA (the avx2 / avx512
// ones live in files compiled with those flags and may only be called when the CPU has them).
// They measure, they do not compute results: the read sum uses several accumulators in an
// order that differs between ISAs.
#pragma once

#include <cstddef>

namespace tally::perf::detail {

// Sum of x[0, n): every byte of x is read once.
float stream_read_scalar(const float* x, size_t n);
float stream_read_avx2(const float* x, size_t n);
float stream_read_avx512(const float* x, size_t n);

// a[i] = b[i] + s * c[i] for i in [0, n): two streams read, one written.
void stream_triad_scalar(float* a, const float* b, const float* c, float s, size_t n);
void stream_triad_avx2(float* a, const float* b, const float* c, float s, size_t n);
void stream_triad_avx512(float* a, const float* b, const float* c, float s, size_t n);

}  // namespace tally::perf::detail
