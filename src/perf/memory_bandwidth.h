// The machine's memory-bandwidth ceiling, measured in the same run as the benchmarks it puts
// in context: decode reads every weight once per token, so tokens/s <= bandwidth / weight
// bytes. Two STREAM-style kernels over buffers far larger than the caches (1 GiB default):
//   read   sum of a float array                         bytes counted: the array
//   triad  a[i] = b[i] + s * c[i], three arrays          bytes counted: 3 arrays (2 reads, 1
//                                                        write; write-allocate not counted,
//                                                        as STREAM does)
// Each repetition splits the arrays over the pool's threads in contiguous ranges (one per
// thread: this is a measurement, not a numeric result). Pages are first touched by the thread
// that later reads them, with transparent huge pages requested. After `warmup` untimed
// repetitions, `repetitions` timed ones give Stats (median, spread) in GB/s (1e9 bytes/s).
// The kernels use AVX-512 or AVX2 when cpu_isa_level() allows (TALLY_ISA lowers it).
//
// Thread rules: drives `pool` (call from the thread that owns it); allocates its buffers per
// call and frees them before returning.
#pragma once

#include <cstddef>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "perf/stats.h"

namespace tally::perf {

constexpr size_t kDefaultBandwidthBytes = size_t{1} << 30;

struct BandwidthOptions {
  size_t bytes = kDefaultBandwidthBytes;  // footprint of each kernel (read array; 3 triad arrays together)
  int repetitions = 10;
  int warmup = 2;
};

struct BandwidthResult {
  Stats read_gbs;           // GB/s of each timed repetition
  Stats triad_gbs;
  size_t read_bytes = 0;    // bytes counted per repetition
  size_t triad_bytes = 0;
  int n_threads = 0;
  IsaLevel isa = IsaLevel::kScalar;
};

BandwidthResult measure_memory_bandwidth(ThreadPool& pool, const BandwidthOptions& options = {});

// Median read / triad bandwidth in GB/s (measure_memory_bandwidth's kernels one at a time).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = kDefaultBandwidthBytes);
double measure_triad_bandwidth(ThreadPool& pool, size_t bytes = kDefaultBandwidthBytes);

// The read kernel's array, kept between samples: a benchmark takes one sample just before
// each of its own timed repetitions, so each figure is paired with the bandwidth of the
// same moment (on a shared machine it drifts by a third within minutes).
// Thread rules: as measure_memory_bandwidth; the pool must outlive the probe.
class ReadBandwidthProbe {
 public:
  ReadBandwidthProbe(ThreadPool& pool, size_t bytes = kDefaultBandwidthBytes);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  double sample_gbs();  // one timed pass over the array, split over the pool's threads
  size_t bytes() const { return n_ * sizeof(float); }

 private:
  struct alignas(64) PaddedSum {
    float value = 0.0f;
  };
  ThreadPool& pool_;
  float (*read_)(const float*, size_t);
  float* x_ = nullptr;  // [n_], 2 MiB aligned
  size_t n_ = 0;
  std::vector<PaddedSum> sums_;  // one per thread: keeps the reads observable
};

}  // namespace tally::perf
