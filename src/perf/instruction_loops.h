// Register-only loops behind measure_instruction_peaks (instruction_peak.h), one file per ISA
// (compiled with its flags; call only when the CPU has it). Each runs `iterations` rounds of
// its instruction on independent accumulators held in registers and returns a value derived
// from them, so the work cannot be optimized away. The value itself means nothing.
#pragma once

#include <cstdint>

namespace tally::perf::detail {

// Operations (2 per multiply-add) one round of each loop performs.
// Independent accumulators: more than latency x throughput of each instruction on current
// cores (e.g. 4 cycles x 2 pipes), and few enough for the register file (12 + 2 constants
// fit AVX2's 16 ymm registers).
inline constexpr int kLoopChains = 12;
inline constexpr int kDotChainsAvx2 = 8;  // each also needs a copy of its input (.cpp)
inline constexpr double kFmaOpsAvx512 = kLoopChains * 16 * 2;   // 12 vfmadd231ps zmm
inline constexpr double kDotOpsAvx512 = kLoopChains * 64 * 2;   // 12 vpdpbusd zmm
inline constexpr double kBf16OpsAvx512 = kLoopChains * 32 * 2;  // 12 vdpbf16ps zmm
inline constexpr double kFmaOpsAvx2 = kLoopChains * 8 * 2;      // 12 vfmadd231ps ymm
inline constexpr double kDotOpsAvx2 = kDotChainsAvx2 * 32 * 2;  // 8 vpmaddubsw+vpmaddwd+vpaddd
inline constexpr double kDotOpsAvxVnni = kLoopChains * 32 * 2;  // 12 vpdpbusd ymm (AVX-VNNI)

float fma_loop_avx512(int64_t iterations);
int32_t dot_loop_avx512(int64_t iterations);
float bf16_loop_avx512(int64_t iterations);
float fma_loop_avx2(int64_t iterations);
int32_t dot_loop_avx2(int64_t iterations);
int32_t dot_loop_avxvnni(int64_t iterations);  // instruction_loops_avxvnni.cpp

}  // namespace tally::perf::detail
