#include "engine/engine_flags.h"

#include <CLI/CLI.hpp>

#include "plan/memory_size.h"
#include "plan/plan.h"

namespace tally {

void engine_flags_add(CLI::App& app, EngineFlags& flags) {
  EngineConfig& e = flags.config;
  app.add_option("-t,--threads", e.threads, "Compute threads; 0 = one per core")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-batched-tokens", e.max_batched_tokens, "Token budget of one engine step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-seqs", e.max_seqs, "Sequences running at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-model-len", e.max_model_len, "Context per sequence; 0 = the model's")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--block-size", e.block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kv_type_flags_add(app, flags.kv_type);
  app.add_option("--kv-cache-memory", flags.kv_cache_memory,
                 "Bytes for the KV pool, e.g. 2GiB; 0 = the budget minus the rest, or without a "
                 "budget room for --max-seqs full contexts (at most 4 GiB)")
      ->capture_default_str();
  app.add_option("--memory-budget", flags.memory_budget,
                 "Bytes for everything (weights, activations, KV), e.g. 8GiB; 0 = no budget")
      ->capture_default_str();
  app.add_option("--scheduler", flags.scheduler,
                 "continuous (iteration-level batching) or static (the classic baseline)")
      ->capture_default_str();
  app.add_flag("--no-prefix-cache", flags.no_prefix_cache,
               "Compute every prompt in full: no reuse of cached KV blocks between requests");
  app.add_option("--kv-offload-memory", flags.kv_offload_memory,
                 "Host RAM for KV blocks the pool evicts, e.g. 4GiB: a prefix hit there is "
                 "copied back instead of recomputed; 0 = none (docs/prefix_cache.md)")
      ->capture_default_str();
  app.add_option("--kv-offload-dir", e.kv_offload_dir,
                 "Directory for a disk tier below the host tier (one file per block; reused "
                 "by a restart with the same model and KV type); needs --kv-offload-disk");
  app.add_option("--kv-offload-disk", flags.kv_offload_disk,
                 "Bytes the disk tier may hold, e.g. 20GiB; 0 = none")
      ->capture_default_str();
  app.add_option("--preemption-mode", flags.preemption_mode,
                 "recompute (a preempted request's blocks stay in the pool's LRU) or swap (they "
                 "are also copied to the host tier; needs --kv-offload-memory)")
      ->capture_default_str();
  spec_flags_add(app, flags.spec);
}

void spec_flags_add(CLI::App& app, SpecFlags& flags) {
  SpecConfig& c = flags.config;
  app.add_option("--speculative", flags.mode,
                 "Speculative decoding: off, ngram (prompt lookup), draft (a small model, "
                 "--draft-model) or auto (per sequence: ngram where it finds a match, else the "
                 "draft model when given); output is unchanged (docs/speculative.md)")
      ->capture_default_str();
  app.add_option("--draft-length", flags.draft_length,
                 "Draft tokens per sequence and step: adaptive (where the measured step cost, "
                 "the draft model's pass cost and the sequence's acceptance say they pay) or "
                 "fixed (always the most)")
      ->capture_default_str();
  app.add_option("--draft-model", c.draft_model_path,
                 "GGUF of a small draft model with the target's vocabulary (--speculative draft "
                 "or auto); its weights and KV come out of --memory-budget");
  app.add_option("--spec-sampled-verify", flags.sampled_verify,
                 "How sampled requests verify a draft model's tokens: token (the draft's "
                 "argmax, matched against the token drawn as without speculation: a seeded "
                 "request's tokens never change) or q (exact rejection sampling with the "
                 "draft's distribution: more accepted, same distribution, but the tokens "
                 "depend on the draft length)")
      ->capture_default_str();
  app.add_option("--ngram-min", c.ngram_min, "Shortest suffix the n-gram drafter matches")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--ngram-max", c.ngram_max, "Longest suffix the n-gram drafter matches")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--num-speculative-tokens", c.num_speculative_tokens,
                 "Most draft tokens per sequence and step")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxSpeculativeTokens));
}

Result<SpecConfig> spec_flags_to_config(const SpecFlags& flags) {
  SpecConfig c = flags.config;
  TALLY_ASSIGN_OR_RETURN(c.mode, spec_mode_from_name(flags.mode));
  TALLY_ASSIGN_OR_RETURN(c.draft_length, draft_length_rule_from_name(flags.draft_length));
  TALLY_ASSIGN_OR_RETURN(c.sampled_verify, spec_sampled_verify_from_name(flags.sampled_verify));
  TALLY_RETURN_IF_ERROR(c.validate());
  return c;
}

void kv_type_flags_add(CLI::App& app, KvTypeFlags& flags) {
  app.add_option("--kv-type", flags.both, "KV cache type of K and V: f32, f16, bf16, q8_0, q4_0")
      ->capture_default_str();
  app.add_option("--kv-type-k", flags.k, "KV cache type of K alone (default: --kv-type)");
  app.add_option("--kv-type-v", flags.v, "KV cache type of V alone (default: --kv-type)");
}

Result<KvTypes> kv_type_flags_parse(const KvTypeFlags& flags) {
  return kv_types_from_flags(flags.both, flags.k, flags.v);
}

namespace {

Result<int64_t> parse_size(const std::string& text, const char* flag) {
  auto bytes = plan::parse_memory_size(text);
  if (!bytes.ok()) return bytes.status().with_context(flag);
  return *bytes;
}

}  // namespace

Result<EngineConfig> engine_flags_to_config(const EngineFlags& flags) {
  EngineConfig e = flags.config;
  TALLY_ASSIGN_OR_RETURN(e.kv_type, kv_type_flags_parse(flags.kv_type));
  TALLY_ASSIGN_OR_RETURN(e.kv_cache_memory,
                         parse_size(flags.kv_cache_memory, "--kv-cache-memory"));
  TALLY_ASSIGN_OR_RETURN(e.memory_budget, parse_size(flags.memory_budget, "--memory-budget"));
  if (flags.scheduler != "continuous" && flags.scheduler != "static") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--scheduler must be continuous or static, got '{}'", flags.scheduler);
  }
  e.static_batching = flags.scheduler == "static";
  e.prefix_cache = !flags.no_prefix_cache;
  TALLY_ASSIGN_OR_RETURN(e.kv_offload_memory,
                         parse_size(flags.kv_offload_memory, "--kv-offload-memory"));
  TALLY_ASSIGN_OR_RETURN(e.kv_offload_disk, parse_size(flags.kv_offload_disk, "--kv-offload-disk"));
  if (flags.preemption_mode != "recompute" && flags.preemption_mode != "swap") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--preemption-mode must be recompute or swap, got '{}'",
                      flags.preemption_mode);
  }
  e.swap_preemption = flags.preemption_mode == "swap";
  TALLY_ASSIGN_OR_RETURN(e.spec, spec_flags_to_config(flags.spec));
  return e;
}

}  // namespace tally
