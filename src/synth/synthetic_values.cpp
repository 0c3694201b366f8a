#include "synth/synthetic_values.h"

#include <array>
#include <cmath>

namespace tally::synth {

namespace {

constexpr int kTableBits = 16;
constexpr int kTableSize = 1 << kTableBits;

// splitmix64 (Steele, Lea, Flood 2014): a counter through a bijective mixer.
uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// x with Phi(x) = p, by bisection on erfc (p in (0, 1)); only used to build the table once.
double normal_quantile(double p) {
  double lo = -12.0;
  double hi = 12.0;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

struct NormalTable {
  std::array<float, kTableSize> z;
  double stddev = 0.0;

  NormalTable() {
    // Symmetric by construction: the upper half mirrors the lower one exactly.
    for (int i = 0; i < kTableSize / 2; ++i) {
      const double x = normal_quantile((i + 0.5) / kTableSize);
      z[i] = static_cast<float>(x);
      z[kTableSize - 1 - i] = static_cast<float>(-x);
    }
    double sum_sq = 0.0;
    for (float v : z) sum_sq += static_cast<double>(v) * v;
    stddev = std::sqrt(sum_sq / kTableSize);
  }
};

const NormalTable& table() {
  static const NormalTable t;  // 256 KiB, built on first use (thread-safe static init)
  return t;
}

}  // namespace

uint64_t synthetic_stream(uint64_t seed, std::string_view tensor_name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (char c : tensor_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return splitmix64_mix(splitmix64_mix(seed + kGolden) ^ h);
}

void synthetic_fill_row(uint64_t stream, int64_t row, float mean, float std, float* out, int64_t n) {
  const float* z = table().z.data();
  uint64_t state = splitmix64_mix(stream ^ (static_cast<uint64_t>(row) * 0xd1b54a32d192ed03ULL));
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    state += kGolden;
    const uint64_t r = splitmix64_mix(state);
    out[i + 0] = mean + std * z[r & 0xffff];
    out[i + 1] = mean + std * z[(r >> 16) & 0xffff];
    out[i + 2] = mean + std * z[(r >> 32) & 0xffff];
    out[i + 3] = mean + std * z[r >> 48];
  }
  if (i < n) {
    state += kGolden;
    uint64_t r = splitmix64_mix(state);
    for (; i < n; ++i, r >>= 16) out[i] = mean + std * z[r & 0xffff];
  }
}

double synthetic_table_std() { return table().stddev; }

}  // namespace tally::synth
