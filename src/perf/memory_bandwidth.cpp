#include "perf/memory_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include "base/check.h"
#include "perf/stream_kernels.h"

namespace tally::perf {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using FloatBuffer = std::unique_ptr<float, FreeDeleter>;

// n floats, 2 MiB aligned, with transparent huge pages asked for (a hint: ignored if off).
FloatBuffer allocate_floats(size_t n) {
  const size_t bytes = std::max(kHugePage, (n * sizeof(float) + kHugePage - 1) / kHugePage * kHugePage);
  auto* p = static_cast<float*>(std::aligned_alloc(kHugePage, bytes));
  TALLY_CHECK(p != nullptr, "bandwidth buffer of {} bytes: out of memory", bytes);
  madvise(p, bytes, MADV_HUGEPAGE);
  return FloatBuffer(p);
}

struct Kernels {
  float (*read)(const float*, size_t);
  void (*triad)(float*, const float*, const float*, float, size_t);
};

Kernels kernels_for(IsaLevel isa) {
  switch (isa) {
    case IsaLevel::kAvx512: return {detail::stream_read_avx512, detail::stream_triad_avx512};
    case IsaLevel::kAvx2: return {detail::stream_read_avx2, detail::stream_triad_avx2};
    case IsaLevel::kScalar: break;
  }
  return {detail::stream_read_scalar, detail::stream_triad_scalar};
}

// [begin, end) of range `t` of `n` items split in `parts` contiguous ranges.
std::pair<size_t, size_t> range_of(size_t n, int parts, int64_t t) {
  const size_t per = n / static_cast<size_t>(parts);
  const size_t extra = n % static_cast<size_t>(parts);
  const size_t i = static_cast<size_t>(t);
  const size_t begin = i * per + std::min(i, extra);
  return {begin, begin + per + (i < extra ? 1 : 0)};
}

// Times `reps` calls of run() after `warmup` untimed ones; GB/s of each from `bytes`.
template <typename Fn>
std::vector<double> time_gbs(int warmup, int reps, size_t bytes, Fn&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> gbs;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbs.push_back(static_cast<double>(bytes) / std::max(s, 1e-9) / 1e9);
  }
  return gbs;
}

Stats measure_read(ThreadPool& pool, const BandwidthOptions& o, size_t& counted) {
  ReadBandwidthProbe probe(pool, o.bytes);
  counted = probe.bytes();
  for (int i = 0; i < o.warmup; ++i) probe.sample_gbs();
  std::vector<double> gbs;
  for (int i = 0; i < o.repetitions; ++i) gbs.push_back(probe.sample_gbs());
  return stats_of(gbs);
}

Stats measure_triad(ThreadPool& pool, const Kernels& k, const BandwidthOptions& o, size_t& counted) {
  const int parts = pool.n_threads();
  const size_t n = std::max<size_t>(o.bytes / (3 * sizeof(float)), 1);
  FloatBuffer a = allocate_floats(n), b = allocate_floats(n), c = allocate_floats(n);
  pool.run(parts, [&](int64_t t, int) {
    const auto [lo, hi] = range_of(n, parts, t);
    std::fill(a.get() + lo, a.get() + hi, 0.0f);
    std::fill(b.get() + lo, b.get() + hi, 1.0f);
    std::fill(c.get() + lo, c.get() + hi, 2.0f);
  });
  counted = 3 * n * sizeof(float);
  const auto gbs = time_gbs(o.warmup, o.repetitions, counted, [&] {
    pool.run(parts, [&](int64_t t, int) {
      const auto [lo, hi] = range_of(n, parts, t);
      k.triad(a.get() + lo, b.get() + lo, c.get() + lo, 0.5f, hi - lo);
    });
  });
  TALLY_CHECK(a.get()[n - 1] == 2.0f, "triad kernel wrote {}, expected 1 + 0.5 * 2", a.get()[n - 1]);
  return stats_of(gbs);
}

}  // namespace

BandwidthResult measure_memory_bandwidth(ThreadPool& pool, const BandwidthOptions& o) {
  TALLY_CHECK(o.repetitions > 0 && o.warmup >= 0, "bandwidth: {} repetitions, {} warm-up", o.repetitions, o.warmup);
  BandwidthResult r;
  r.isa = cpu_isa_level();
  r.n_threads = pool.n_threads();
  const Kernels k = kernels_for(r.isa);
  r.read_gbs = measure_read(pool, o, r.read_bytes);
  r.triad_gbs = measure_triad(pool, k, o, r.triad_bytes);
  return r;
}

double measure_read_bandwidth(ThreadPool& pool, size_t bytes) {
  BandwidthOptions o;
  o.bytes = bytes;
  size_t counted = 0;
  return measure_read(pool, o, counted).median;
}

double measure_triad_bandwidth(ThreadPool& pool, size_t bytes) {
  BandwidthOptions o;
  o.bytes = bytes;
  size_t counted = 0;
  return measure_triad(pool, kernels_for(cpu_isa_level()), o, counted).median;
}

ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool& pool, size_t bytes)
    : pool_(pool),
      read_(kernels_for(cpu_isa_level()).read),
      n_(std::max<size_t>(bytes / sizeof(float), 1)),
      sums_(static_cast<size_t>(pool.n_threads())) {
  x_ = allocate_floats(n_).release();
  const int parts = pool_.n_threads();
  pool_.run(parts, [&](int64_t t, int) {
    const auto [b, e] = range_of(n_, parts, t);
    std::fill(x_ + b, x_ + e, 1.0f);  // first touch by the thread that reads it
  });
}

ReadBandwidthProbe::~ReadBandwidthProbe() { std::free(x_); }  // allocate_floats' aligned_alloc

double ReadBandwidthProbe::sample_gbs() {
  const int parts = pool_.n_threads();
  const auto t0 = std::chrono::steady_clock::now();
  pool_.run(parts, [&](int64_t t, int) {
    const auto [b, e] = range_of(n_, parts, t);
    sums_[static_cast<size_t>(t)].value += read_(x_ + b, e - b);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every pass sums ones: a kernel that skipped its reads would show here.
  TALLY_CHECK(sums_[0].value > 0.0f, "read kernel summed {} over ones", sums_[0].value);
  return static_cast<double>(bytes()) / std::max(s, 1e-9) / 1e9;
}

}  // namespace tally::perf
