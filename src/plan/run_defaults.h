// The settings a run starts from when no flag says otherwise, in ONE place: `tally plan`
// (PlanOptions), `tally serve` and `tally bench throughput` (EngineConfig, EngineFlags) and
// `tally generate` take their defaults from here, so that the plan describes the run and the
// engine's start-up ledger equals the plan's line for line.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace tally::plan {

// f16, as llama.cpp: half the memory of f32, and the greedy text of the golden models does
// not move at their lengths (tests pass --kv-type f32 where they compare with an f32 reference).
inline constexpr DType kDefaultKvType = DType::kF16;
inline constexpr int32_t kDefaultBlockSize = 16;      // tokens per KV block
inline constexpr int32_t kDefaultBatchTokens = 512;   // most tokens in one forward step
inline constexpr int32_t kDefaultMaxSeqs = 64;        // sequences resident at once
inline constexpr int32_t kDefaultContext = 0;         // tokens per sequence; 0 = the model's

}  // namespace tally::plan
