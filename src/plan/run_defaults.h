// The settings a run starts from when no flag says otherwise, in ONE place: `tally plan`
// (PlanOptions), `tally serve` and `tally bench throughput` (EngineConfig, EngineFlags) and
// `tally generate` take their defaults from here, so that the plan describes the run and the
// engine's start-up ledger equals the plan's line for line.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/kv_types.h"

namespace tally::plan {

// f16, as llama.cpp: half the memory of f32. The golden tests against llama2.c's run.c (an f32
// KV cache) pass --kv-type f32: with f16 some of their greedy continuations part from run.c's
// (rounding, not a bug), so a bit-for-bit comparison needs run.c's own precision.
inline constexpr DType kDefaultKvType = DType::kF16;
inline constexpr int32_t kDefaultBlockSize = 16;      // tokens per KV block
inline constexpr int32_t kDefaultBatchTokens = 512;   // most tokens in one forward step
inline constexpr int32_t kDefaultMaxSeqs = 64;        // sequences resident at once
inline constexpr int32_t kDefaultContext = 0;         // tokens per sequence; 0 = the model's

}  // namespace tally::plan
