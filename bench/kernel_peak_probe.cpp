// The matmul kernels' in-cache rate in short samples, for comparing kernel versions on a shared
// machine: the same measurement as `tally bench`'s kernel peak (perf::measure_kernel_peak: a
// panel of rows_per_thread x n_in per thread in the model's layout against n_tokens rows),
// but with samples of ~2 ms and the best one reported beside the median: a sample that short
// often runs unshared even under load, so the best is what the kernel does on a free core.
//   tally_kernel_peak_probe [threads=1] [n_tokens=64] [types=q4_0,q8_0,f16,f32] [n_in=2048]
//   (TALLY_ISA=avx2 lowers the path, as everywhere)
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "backend/cpu/matmul.h"
#include "base/thread_pool.h"
#include "perf/kernel_peak.h"
#include "tensor/dtype.h"

int main(int argc, char** argv) {
  using namespace tally;
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int64_t n_tokens = argc > 2 ? std::atoll(argv[2]) : 64;
  const std::string types = argc > 3 ? argv[3] : "q4_0,q8_0,f16,f32";
  const int64_t n_in = argc > 4 ? std::atoll(argv[4]) : 2048;
  ThreadPool pool(threads);
  std::printf("path %s, %d threads, %lld tokens, n_in %lld, 64 rows a thread\n",
              cpu::matmul_path_name(), threads, static_cast<long long>(n_tokens),
              static_cast<long long>(n_in));
  std::stringstream list(types);
  for (std::string name; std::getline(list, name, ',');) {
    const std::optional<DType> type = dtype_from_name(name);
    if (!type) {
      std::fprintf(stderr, "unknown type %s\n", name.c_str());
      return 2;
    }
    perf::KernelPeakOptions o;
    o.n_in = n_in;
    o.n_tokens = n_tokens;
    o.repetitions = 40;
    o.warmup = 3;
    o.seconds_per_sample = 0.002;
    const perf::KernelPeak p = perf::measure_kernel_peak(*type, pool, o);
    std::printf("%-6s best %7.1f GFLOP/s  median %7.1f  (p10 %.1f)\n", name.c_str(),
                p.gflops.max, p.gflops.median, p.gflops.p10);
  }
  return 0;
}
