#include "engine/engine_sizing.h"

#include <algorithm>
#include <limits>

#include "plan/memory_size.h"

namespace tally {

namespace {

Status check_offload_config(const EngineConfig& c) {
  const bool tiers = c.kv_offload_memory > 0 || !c.kv_offload_dir.empty() || c.kv_offload_disk > 0;
  if (tiers && (!c.prefix_cache || c.static_batching)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "engine: the KV offload tiers hold prefix-cache blocks: they need the "
                      "prefix cache and the continuous scheduler");
  }
  if (c.kv_offload_dir.empty() != (c.kv_offload_disk == 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "engine: --kv-offload-dir and --kv-offload-disk go together (got '{}' and "
                      "{} bytes)", c.kv_offload_dir, c.kv_offload_disk);
  }
  if (c.swap_preemption && c.kv_offload_memory == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "engine: --preemption-mode swap needs a host tier (--kv-offload-memory)");
  }
  return Status::ok_status();
}

Status check_config(const EngineConfig& c) {
  auto at_least = [](int64_t v, int64_t lo, const char* name) -> Status {
    if (v >= lo) return Status::ok_status();
    return make_error(ErrorCode::kInvalidArgument, "engine: {} is {} (must be >= {})", name, v, lo);
  };
  TALLY_RETURN_IF_ERROR(at_least(c.threads, 0, "threads"));
  TALLY_RETURN_IF_ERROR(at_least(c.max_batched_tokens, 1, "max_batched_tokens"));
  TALLY_RETURN_IF_ERROR(at_least(c.max_seqs, 1, "max_seqs"));
  TALLY_RETURN_IF_ERROR(at_least(c.max_model_len, 0, "max_model_len"));
  TALLY_RETURN_IF_ERROR(at_least(c.block_size, 1, "block_size"));
  TALLY_RETURN_IF_ERROR(at_least(c.kv_cache_memory, 0, "kv_cache_memory"));
  TALLY_RETURN_IF_ERROR(at_least(c.memory_budget, 0, "memory_budget"));
  TALLY_RETURN_IF_ERROR(at_least(c.max_waiting, 1, "max_waiting"));
  TALLY_RETURN_IF_ERROR(at_least(c.kv_offload_memory, 0, "kv_offload_memory"));
  TALLY_RETURN_IF_ERROR(at_least(c.kv_offload_disk, 0, "kv_offload_disk"));
  TALLY_RETURN_IF_ERROR(check_offload_config(c));
  if (Status st = kv_types_supported(c.kv_type); !st.ok())
    return make_error(ErrorCode::kInvalidArgument, "engine: {}", st.message());
  return c.spec.validate();
}

}  // namespace

plan::PlanOptions engine_plan_options(const EngineConfig& config, int32_t max_model_len) {
  plan::PlanOptions o;
  o.kv_type = config.kv_type;
  o.context = max_model_len;
  o.concurrency = config.max_seqs;
  o.block_size = config.block_size;
  o.batch_tokens = config.max_batched_tokens;
  o.draft_tokens = config.spec.draft_positions();
  o.kv_offload_host_bytes = config.kv_offload_memory;
  if (config.memory_budget > 0) o.budget = config.memory_budget;
  return o;
}

Result<EngineSizing> engine_sizing(const EngineConfig& config, const ModelConfig& model,
                                   const plan::PlanModel& plan_model,
                                   const plan::PlanModel* draft_plan_model) {
  TALLY_RETURN_IF_ERROR(check_config(config));
  EngineSizing s;
  const int64_t len = config.max_model_len > 0 ? config.max_model_len : model.context_length;
  if (len > model.context_length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "engine: max_model_len {} is longer than the model's context of {} tokens",
                      len, model.context_length);
  }
  s.max_model_len = static_cast<int32_t>(len);
  TALLY_ASSIGN_OR_RETURN(
      s.plan, plan::compute_plan(plan_model, engine_plan_options(config, s.max_model_len),
                                 draft_plan_model));
  const plan::Plan& p = s.plan;
  int64_t n_blocks = 0;
  if (config.kv_cache_memory > 0) {
    n_blocks = config.kv_cache_memory / p.kv_block_bytes;  // the target's KV; a draft's on top
  } else if (config.memory_budget > 0) {
    if (!p.model_fits) {
      return make_error(ErrorCode::kOutOfMemory,
                        "engine: the memory budget of {} is {} short of weights + activations + "
                        "overhead alone",
                        plan::format_bytes(p.budget_bytes), plan::format_bytes(p.shortfall_bytes));
    }
    n_blocks = p.n_blocks;  // what `tally plan --memory` prints as its block count
  } else {
    n_blocks = std::min(p.kv_bytes_requested, kDefaultKvCacheBytes) / p.pool_block_bytes;
  }
  if (n_blocks < 1) {
    return make_error(
        ErrorCode::kOutOfMemory, "engine: no room for one KV block of {} ({} tokens of {} bytes)",
        plan::format_bytes(p.pool_block_bytes), config.block_size,
        p.pool_block_bytes / config.block_size);
  }
  s.n_blocks =
      static_cast<int32_t>(std::min<int64_t>(n_blocks, std::numeric_limits<int32_t>::max()));
  return s;
}

}  // namespace tally
