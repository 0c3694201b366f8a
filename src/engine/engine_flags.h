// The flags that configure the Engine, declared once (name, default, help) for every command
// that runs one: `tally serve` and `tally bench throughput` add them with engine_flags_add()
// and turn them into an EngineConfig with engine_flags_to_config(), so both accept the same
// values, show the same help and refuse a bad value with the same message.
//
// EngineFlags is plain data: the server library keeps one in its options (--max-queue and the
// model path land in its config) without linking the engine; the command that creates the
// Engine calls the two functions.
#pragma once

#include <string>

#include "base/status.h"
#include "engine/engine.h"

namespace CLI {
class App;
}

namespace tally {

// The speculative-decoding flags as typed: `tally generate` adds them alone, the engine
// flags include them.
struct SpecFlags {
  std::string mode = "auto";
  std::string draft_length = "adaptive";
  std::string sampled_verify = "token";
  SpecConfig config;
};

// The engine flags as typed. Numbers land in `config` directly (CLI11 checks their range);
// the texts are converted by engine_flags_to_config(). Fields no flag here sets (model_path,
// max_waiting) are the command's own and pass through unchanged.
// --kv-type, --kv-type-k, --kv-type-v as typed (kv_types_from_flags converts them).
struct KvTypeFlags {
  std::string both{dtype_name(plan::kDefaultKvType)};
  std::string k;  // empty: --kv-type's
  std::string v;
};
// Adds --kv-type, --kv-type-k and --kv-type-v, bound to `flags`.
void kv_type_flags_add(CLI::App& app, KvTypeFlags& flags);
Result<KvTypes> kv_type_flags_parse(const KvTypeFlags& flags);

struct EngineFlags {
  EngineConfig config;
  KvTypeFlags kv_type;
  std::string kv_cache_memory = "0";  // a memory size ("2GiB"); 0 = derived (see the help)
  std::string memory_budget = "0";    // a memory size ("8GiB"); 0 = no budget
  std::string scheduler = "continuous";
  bool no_prefix_cache = false;
  std::string kv_offload_memory = "0";  // a memory size; 0 = no host tier
  std::string kv_offload_disk = "0";    // a memory size; 0 = no disk tier
  std::string preemption_mode = "recompute";
  SpecFlags spec;
};

// Adds --speculative, --draft-model, --spec-sampled-verify, --ngram-min, --ngram-max and
// --num-speculative-tokens.
void spec_flags_add(CLI::App& app, SpecFlags& flags);
// InvalidArgument naming the flag: "--speculative must be off, ngram or auto, got 'x' ...".
Result<SpecConfig> spec_flags_to_config(const SpecFlags& flags);

// Adds -t/--threads, --max-batched-tokens, --max-seqs, --max-model-len, --block-size,
// --kv-type(-k/-v), --kv-cache-memory, --memory-budget, --scheduler, --no-prefix-cache, the
// offload flags (--kv-offload-memory/-dir/-disk, --preemption-mode) and the
// speculative-decoding flags, bound to `flags` (which must outlive the parse).
void engine_flags_add(CLI::App& app, EngineFlags& flags);

// `flags.config` with the texts converted. InvalidArgument / Unsupported naming the flag:
// "--kv-type: unknown kv type 'f8' (...)", "--memory-budget: memory size '8G': ...",
// "--scheduler must be continuous or static, got 'fifo'".
Result<EngineConfig> engine_flags_to_config(const EngineFlags& flags);

}  // namespace tally
