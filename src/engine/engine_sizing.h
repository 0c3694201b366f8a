// How big the engine's allocations are for a config and a model, worked out before anything
// is allocated: the context, the KV pool's block count (from --kv-cache-memory, or what the
// memory budget leaves, by src/plan's arithmetic so that `tally plan` gives the same count)
// and the memory ledger.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "engine/engine.h"
#include "engine/engine_types.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "plan/plan.h"
#include "plan/plan_model.h"

namespace tally {

// The KV pool when neither kv_cache_memory nor memory_budget is given: room for max_seqs
// sequences of max_model_len tokens, but at most this much.
inline constexpr int64_t kDefaultKvCacheBytes = int64_t{4} << 30;

struct EngineSizing {
  int32_t max_model_len = 0;
  int32_t n_blocks = 0;
  plan::Plan plan;  // the plan for the same settings (context, concurrency, budget, ...)
};

// The plan options that describe `config` (the settings `tally plan` takes for the same run).
plan::PlanOptions engine_plan_options(const EngineConfig& config, int32_t max_model_len);

// InvalidArgument for settings out of range (naming the field), OutOfMemory when the budget
// leaves no room for one KV block. With a draft model (draft_plan_model, from its GGUF) the
// budget pays for its weights and buffers first, and each block for its KV too (the budget's
// rest and the default pool are counted in target + draft bytes per block);
// --kv-cache-memory is the target's KV alone, the draft's coming on top (its ledger line).
Result<EngineSizing> engine_sizing(const EngineConfig& config, const ModelConfig& model,
                                   const plan::PlanModel& plan_model,
                                   const plan::PlanModel* draft_plan_model = nullptr);

}  // namespace tally
