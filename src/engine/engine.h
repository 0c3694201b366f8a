// The engine: many requests share one model. One thread runs the step loop (schedule ->
// prepare batch -> forward -> sample -> update) and alone owns the scheduler, the KV block
// tables and request state; other threads talk to it through a queue in (submit, cancel) and
// per-request event callbacks out.
//
// Thread rules: submit(), cancel(), metrics(), ledger() and the accessors may be called from
// any thread. Event callbacks run on the engine thread, in order per request; they must not
// block or call back into the engine synchronously (post to your own thread instead: the
// server posts into its io_context).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "engine/engine_types.h"
#include "plan/run_defaults.h"
#include "sched/ngram_draft.h"
#include "tensor/dtype.h"

namespace tally {

class Tokenizer;
struct ModelConfig;

struct EngineConfig {
  std::string model_path;
  int threads = 0;                  // compute threads; 0 = one per core
  // Defaults: plan/run_defaults.h, the same as `tally plan`'s.
  int32_t max_batched_tokens = plan::kDefaultBatchTokens;  // token budget of one step
  int32_t max_seqs = plan::kDefaultMaxSeqs;                // sequences running at once
  int32_t max_model_len = plan::kDefaultContext;           // context per sequence; 0 = the model's
  int32_t block_size = plan::kDefaultBlockSize;            // tokens per KV block
  KvTypes kv_type = plan::kDefaultKvType;                  // K and V: f32, f16, bf16, q8_0, q4_0
  int64_t kv_cache_memory = 0;      // bytes for the KV pool; 0 = memory_budget - the rest
  int64_t memory_budget = 0;        // bytes for everything; 0 = a default (documented)
  int32_t max_waiting = 1024;       // queue limit: submit() answers ResourceExhausted past it
  bool static_batching = false;     // the classic baseline (--scheduler static)
  bool prefix_cache = true;         // reuse computed full KV blocks (--no-prefix-cache)
  // Offload tiers below the KV pool (docs/prefix_cache.md; need the prefix cache).
  int64_t kv_offload_memory = 0;    // bytes of host RAM for evicted blocks; 0 = none
  std::string kv_offload_dir;       // disk tier directory; empty = none
  int64_t kv_offload_disk = 0;      // bytes the disk tier may hold (with kv_offload_dir)
  bool swap_preemption = false;     // --preemption-mode swap: preempted blocks to the host tier
  SpecConfig spec;                  // speculative decoding (--speculative, docs/speculative.md)
  // A model whose every layer has a sliding window (ModelConfig::full_window) drops the KV
  // blocks behind it (kv/kv_cache_manager.h); true keeps them all (the tests' baseline).
  bool keep_out_of_window_kv = false;
};

using EngineEventCallback = std::function<void(const EngineEvent&)>;

class Engine {
 public:
  // Loads the model and tokenizer, allocates the KV pool and buffers (the ledger), starts the
  // step thread.
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
  virtual ~Engine() = default;

  // Every check submit() makes of a request (check_engine_request, request_check.h), with
  // nothing queued: InvalidArgument for bad parameters, OutOfRange for a prompt longer than
  // the context (message names both lengths); Status::field() names the field at fault.
  virtual Status check_request(const EngineRequest& request) const = 0;
  // Queues a request. Errors (nothing queued, no events): those of check_request(),
  // ResourceExhausted when the queue is full.
  virtual Result<RequestId> submit(EngineRequest request, EngineEventCallback on_event) = 0;
  // Aborts a request: its blocks are freed at the next step and it ends with kAbort.
  // Unknown or finished ids are ignored.
  virtual void cancel(RequestId id) = 0;

  virtual EngineMetrics metrics() const = 0;
  virtual const MemoryLedger& ledger() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ModelConfig& model_config() const = 0;
  virtual int32_t max_model_len() const = 0;

  // Stops taking requests; waits up to `timeout_seconds` for running ones, aborts the rest,
  // then stops the thread. Also done by the destructor (timeout 0).
  virtual void shutdown(double timeout_seconds) = 0;
};

}  // namespace tally
