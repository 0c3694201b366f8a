// The hardware's peak rate for the instructions the matmul kernels are built on, measured with
// register-only loops (no memory operand, enough independent chains to cover each
// instruction's latency) on every thread of the pool at once:
//   fp32 FMA    vfmadd231ps (zmm on AVX-512, ymm on AVX2): 2 FLOPs per lane
//   int8 dot    vpdpbusd zmm (AVX-512 VNNI), vpdpbusd ymm (AVX-VNNI), or the AVX2 sequence
//               vpmaddubsw + vpmaddwd + vpaddd: 2 ops per int8 multiply-add
//   bf16 dot    vdpbf16ps zmm (AVX-512 BF16): 2 FLOPs per bf16 pair multiply-add
// on the ISA level cpu_isa_level() allows (TALLY_ISA lowers it). A kernel's peak (kernel_peak.h)
// over its instruction's peak says how much of the core the kernel uses.
//
// Thread rules: drives `pool` from the calling thread.
#pragma once

#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "perf/stats.h"
#include "tensor/dtype.h"

namespace tally::perf {

enum class PeakInstruction { kFmaF32, kDotInt8, kDotBf16 };

// Samples are short, and the peak is the sum over threads of each thread's fastest sample:
// on a shared machine a register loop can only be slowed down (descheduled, its core
// shared), a sample shorter than a scheduler time slice often runs alone, and the loops of
// different cores do not interfere (no memory), while all threads being unshared at the same
// moment is rare under load.
struct InstructionPeakOptions {
  int repetitions = 20;               // timed samples
  int warmup = 2;                     // untimed samples first (also lifts the clock)
  double seconds_per_sample = 0.002;  // each thread loops for about this long per sample
};

struct InstructionPeak {
  PeakInstruction kind = PeakInstruction::kFmaF32;
  std::string instruction;  // e.g. "vpdpbusd zmm"
  Stats gops;               // G ops/s (1e9) of each timed sample, all threads together
  double peak_gops = 0;     // sum over threads of each one's fastest sample (see the options)
  double peak() const { return peak_gops; }
};

// One entry per instruction this CPU has at the current ISA level (scalar: none).
std::vector<InstructionPeak> measure_instruction_peaks(ThreadPool& pool,
                                                       const InstructionPeakOptions& options = {});

// "fp32 fma", "int8 dot", "bf16 dot".
const char* peak_instruction_name(PeakInstruction kind);

// The instruction whose peak bounds a weight type's kernel: int8 dot for the quantized types
// (activations are quantized to int8), fp32 FMA for F32 / F16 / BF16 (converted to f32 first).
PeakInstruction peak_instruction_for(DType type);

// The entry of `peaks` for the instruction of `type`'s kernel, or nullptr.
const InstructionPeak* instruction_peak_for(const std::vector<InstructionPeak>& peaks, DType type);

}  // namespace tally::perf
