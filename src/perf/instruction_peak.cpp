#include "perf/instruction_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "base/check.h"
#include "base/cpu_features.h"
#include "perf/instruction_loops.h"
#include "perf/seconds_since.h"

namespace tally::perf {

namespace {

// A loop (instruction_loops.h) and the operations one of its rounds performs.
struct PeakLoop {
  PeakInstruction kind;
  const char* instruction;
  double ops_per_round;
  double (*run)(int64_t rounds);  // returns a value of the loop's result, to be kept
};

template <auto Loop>
double run_loop(int64_t rounds) {
  return static_cast<double>(Loop(rounds));
}

std::vector<PeakLoop> loops_of_this_cpu() {
  const CpuFeatures& f = cpu_features();
  std::vector<PeakLoop> loops;
  switch (cpu_isa_level()) {
    case IsaLevel::kAvx512:
      loops.push_back({PeakInstruction::kFmaF32, "vfmadd231ps zmm", detail::kFmaOpsAvx512,
                       run_loop<detail::fma_loop_avx512>});
      if (f.avx512vnni)
        loops.push_back({PeakInstruction::kDotInt8, "vpdpbusd zmm", detail::kDotOpsAvx512,
                         run_loop<detail::dot_loop_avx512>});
      else
        loops.push_back({PeakInstruction::kDotInt8, "vpmaddubsw+vpmaddwd ymm",
                         detail::kDotOpsAvx2, run_loop<detail::dot_loop_avx2>});
      if (f.avx512bf16)
        loops.push_back({PeakInstruction::kDotBf16, "vdpbf16ps zmm", detail::kBf16OpsAvx512,
                         run_loop<detail::bf16_loop_avx512>});
      break;
    case IsaLevel::kAvx2:
      loops.push_back({PeakInstruction::kFmaF32, "vfmadd231ps ymm", detail::kFmaOpsAvx2,
                       run_loop<detail::fma_loop_avx2>});
      // The AVX2 kernels take AVX-VNNI's vpdpbusd where the CPU has it (cpu/matmul.cpp).
      if (f.avxvnni)
        loops.push_back({PeakInstruction::kDotInt8, "vpdpbusd ymm (AVX-VNNI)",
                         detail::kDotOpsAvxVnni, run_loop<detail::dot_loop_avxvnni>});
      else
        loops.push_back({PeakInstruction::kDotInt8, "vpmaddubsw+vpmaddwd ymm",
                         detail::kDotOpsAvx2, run_loop<detail::dot_loop_avx2>});
      break;
    case IsaLevel::kScalar:
      break;
  }
  return loops;
}

// Where the loops' results go, so that no loop is dead code.
std::atomic<double> g_loop_results{0};

// Every thread of the pool runs `rounds` rounds at once (one task each); returns the G ops/s
// of all together, and raises each task's fastest rate so far in best_per_task.
double sample_gops(const PeakLoop& loop, int64_t rounds, ThreadPool& pool,
                   std::vector<double>& best_per_task) {
  const double ops = loop.ops_per_round * static_cast<double>(rounds);
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(pool.n_threads(), [&](int64_t task, int) {
    const auto start = std::chrono::steady_clock::now();
    g_loop_results.fetch_add(loop.run(rounds), std::memory_order_relaxed);
    const double gops = ops / std::max(seconds_since(start), 1e-9) / 1e9;
    double& best = best_per_task[static_cast<size_t>(task)];  // one writer per task
    best = std::max(best, gops);
  });
  const double s = std::max(seconds_since(t0), 1e-9);
  return ops * pool.n_threads() / s / 1e9;
}

}  // namespace

std::vector<InstructionPeak> measure_instruction_peaks(ThreadPool& pool,
                                                       const InstructionPeakOptions& o) {
  TALLY_CHECK(o.repetitions > 0 && o.warmup >= 0 && o.seconds_per_sample > 0,
              "instruction peak: bad options reps={} warmup={} seconds={}", o.repetitions,
              o.warmup, o.seconds_per_sample);
  std::vector<InstructionPeak> peaks;
  for (const PeakLoop& loop : loops_of_this_cpu()) {
    // Rounds per sample from one calibration run on the calling thread.
    constexpr int64_t kCalibration = 1 << 14;
    const auto t0 = std::chrono::steady_clock::now();
    g_loop_results.fetch_add(loop.run(kCalibration), std::memory_order_relaxed);
    const double per_round = std::max(seconds_since(t0) / kCalibration, 1e-12);
    const int64_t rounds = std::clamp<int64_t>(
        static_cast<int64_t>(o.seconds_per_sample / per_round), 1, int64_t{1} << 32);
    std::vector<double> samples;
    std::vector<double> best_per_task(static_cast<size_t>(pool.n_threads()), 0.0);
    for (int i = 0; i < o.warmup + o.repetitions; ++i) {
      if (i == o.warmup) std::fill(best_per_task.begin(), best_per_task.end(), 0.0);
      const double gops = sample_gops(loop, rounds, pool, best_per_task);
      if (i >= o.warmup) samples.push_back(gops);
    }
    InstructionPeak peak{loop.kind, loop.instruction, stats_of(samples), 0.0};
    for (double b : best_per_task) peak.peak_gops += b;
    peaks.push_back(peak);
  }
  return peaks;
}

const char* peak_instruction_name(PeakInstruction kind) {
  switch (kind) {
    case PeakInstruction::kFmaF32:
      return "fp32 fma";
    case PeakInstruction::kDotInt8:
      return "int8 dot";
    case PeakInstruction::kDotBf16:
      return "bf16 dot";
  }
  return "?";
}

PeakInstruction peak_instruction_for(DType type) {
  switch (type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return PeakInstruction::kFmaF32;
    default:
      return PeakInstruction::kDotInt8;
  }
}

const InstructionPeak* instruction_peak_for(const std::vector<InstructionPeak>& peaks,
                                            DType type) {
  const PeakInstruction kind = peak_instruction_for(type);
  for (const InstructionPeak& p : peaks)
    if (p.kind == kind) return &p;
  return nullptr;
}

}  // namespace tally::perf
