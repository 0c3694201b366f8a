// The bandwidth kernels compute what they claim on every ISA this CPU has (odd lengths and
// offsets included), and a small measurement gives positive, ordered statistics. No timing
// is asserted beyond "positive".
#include "perf/memory_bandwidth.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "perf/stream_kernels.h"

namespace tally::perf {
namespace {

struct KernelSet {
  const char* name;
  bool available;
  float (*read)(const float*, size_t);
  void (*triad)(float*, const float*, const float*, float, size_t);
};

std::vector<KernelSet> kernel_sets() {
  const CpuFeatures& f = cpu_features();
  return {
      {"scalar", true, detail::stream_read_scalar, detail::stream_triad_scalar},
      {"avx2", f.avx2 && f.fma, detail::stream_read_avx2, detail::stream_triad_avx2},
      {"avx512", f.avx512f, detail::stream_read_avx512, detail::stream_triad_avx512},
  };
}

TEST(StreamKernels, ReadSumsEveryElementOnEachIsa) {
  std::vector<float> x(1000 + 77);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);  // small integers: exact sums
  for (const KernelSet& k : kernel_sets()) {
    if (!k.available) continue;
    SCOPED_TRACE(k.name);
    for (size_t offset : {0u, 1u, 3u}) {
      for (size_t n : {0u, 1u, 15u, 63u, 64u, 65u, 1000u}) {
        double want = 0.0;
        for (size_t i = 0; i < n; ++i) want += x[offset + i];
        EXPECT_EQ(k.read(x.data() + offset, n), static_cast<float>(want)) << offset << " " << n;
      }
    }
  }
}

TEST(StreamKernels, TriadOnEachIsa) {
  const size_t n = 131;
  std::vector<float> b(n + 1), c(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    b[i] = static_cast<float>(i);
    c[i] = static_cast<float>(2 * i + 1);
  }
  for (const KernelSet& k : kernel_sets()) {
    if (!k.available) continue;
    SCOPED_TRACE(k.name);
    std::vector<float> a(n + 2, -1.0f);
    k.triad(a.data() + 1, b.data() + 1, c.data() + 1, 0.5f, n - 1);
    EXPECT_EQ(a[0], -1.0f);  // nothing outside [1, n)
    EXPECT_EQ(a[n], -1.0f);
    for (size_t i = 1; i < n; ++i) EXPECT_EQ(a[i], b[i] + 0.5f * c[i]) << i;
  }
}

TEST(MemoryBandwidth, SmallMeasurementGivesPositiveOrderedStats) {
  ThreadPool pool(2);
  BandwidthOptions o;
  o.bytes = size_t{8} << 20;  // a test, not a measurement: small and quick
  o.repetitions = 3;
  o.warmup = 1;
  const BandwidthResult r = measure_memory_bandwidth(pool, o);
  EXPECT_EQ(r.n_threads, 2);
  EXPECT_EQ(r.isa, cpu_isa_level());
  EXPECT_EQ(r.read_bytes, o.bytes);
  EXPECT_EQ(r.triad_bytes, 3 * (o.bytes / 12) * sizeof(float));
  for (const Stats& s : {r.read_gbs, r.triad_gbs}) {
    EXPECT_EQ(s.n, 3);
    EXPECT_GT(s.min, 0.0);
    EXPECT_TRUE(std::isfinite(s.max));
    EXPECT_LE(s.min, s.p10);
    EXPECT_LE(s.p10, s.median);
    EXPECT_LE(s.median, s.p90);
    EXPECT_LE(s.p90, s.max);
  }
  EXPECT_GT(measure_read_bandwidth(pool, size_t{4} << 20), 0.0);
  EXPECT_GT(measure_triad_bandwidth(pool, size_t{4} << 20), 0.0);
}

}  // namespace
}  // namespace tally::perf
