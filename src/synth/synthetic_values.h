// Deterministic pseudo-random weights for synthetic models: what a value is depends only on
// (seed, tensor name, row, column), never on the thread count, the chunking or the file type,
// so an f32 and a q4_0 file of one seed hold the same weights before rounding.
//
// Values come from a fixed table of 65536 standard-normal quantiles, (i + 0.5) / 65536 for
// i in [0, 65536), indexed by 16-bit pieces of a per-row splitmix64 stream: four values per
// 64-bit draw, about a nanosecond each. The table is exactly mean 0 and close to std 1 (it
// ends near 4.3 sigma, so its std is 0.9997); a 7B model's 6.7e9 values cost seconds,
// not the minutes that Box-Muller with log/sin per pair would.
#pragma once

#include <cstdint>
#include <string_view>

namespace tally::synth {

// The stream of one tensor: a hash of its name mixed with the seed.
uint64_t synthetic_stream(uint64_t seed, std::string_view tensor_name);

// out[i] = mean + std * z(stream, row, i) for i in [0, n), z ~ N(0, 1) (quantile table).
void synthetic_fill_row(uint64_t stream, int64_t row, float mean, float std, float* out, int64_t n);

// The table's standard deviation (about 0.9997); tests compare against it.
double synthetic_table_std();

}  // namespace tally::synth
