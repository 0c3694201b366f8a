// The synchronous engine: one object that owns the model, the scheduler, the runner and the
// per-request state, and runs one step at a time on the calling thread:
//   schedule -> runner (copies, batch, forward) -> sample -> update -> events.
// Progress lives in the scheduler alone (num_computed per sequence, the tokens, the block
// tables); each step's SchedulerOutput carries what the runner needs, and the runner keeps
// nothing between steps.
// update() is the one place where a sample ends: stop tokens, max_tokens, a full context and
// stop strings are all decided there (min_tokens bans stop tokens from the logits before
// sampling, beside it in engine_update.cpp). The scheduler only applies those decisions.
//
// `Engine` (engine.h) is this core on its own thread with a queue in front; `tally generate`,
// `tally bench throughput` and the golden tests drive the core directly.
//
// Thread rules: check_request() and the accessors of immutable state (tokenizer, model config,
// max_model_len, ledger, max_seqs, max_waiting) may be called from any thread; metrics()
// too (a snapshot published by each step under its own mutex). Everything else belongs to one
// thread at a time. Event callbacks run inside add_request() (errors) and step(), on the
// calling thread, in order per request, with no lock held.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/thread_pool.h"
#include "engine/draft_model_runner.h"
#include "engine/engine.h"
#include "engine/engine_offload.h"
#include "engine/engine_sizing.h"
#include "engine/request_state.h"
#include "model/model.h"
#include "runner/batch_runner.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace tally {

class EngineCore {
 public:
  // Loads the model and tokenizer from config.model_path, then as below.
  static Result<std::unique_ptr<EngineCore>> create(const EngineConfig& config);
  // Sizes (the ledger) and allocates the KV pool and buffers for an already loaded model.
  static Result<std::unique_ptr<EngineCore>> create(const EngineConfig& config,
                                                    std::unique_ptr<Model> model,
                                                    std::unique_ptr<Tokenizer> tokenizer);
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Every check a request gets: check_engine_request (request_check.h) with this engine's
  // limits. InvalidArgument, or OutOfRange for a prompt that leaves no room in the context;
  // Status::field() names the request field at fault.
  Status check_request(const EngineRequest& request) const;
  // Queues a request that passed check_request(). `seed` is the request's resolved seed
  // (never kRandomSeed). A request the scheduler refuses (a full queue) gets its kError here.
  void add_request(RequestId id, EngineRequest request, uint64_t seed,
                   EngineEventCallback on_event, EngineClock::time_point arrival);
  // Ends a request with kAbort at the next step (unknown or finished ids are ignored).
  void abort_request(RequestId id);
  // Every request, queued or running, ends with kAbort at the next step.
  void abort_all();
  bool has_unfinished() const { return sched_.has_unfinished(); }
  // One step; the metrics are published before the events go out, so a caller that sees a
  // request's end sees its blocks freed.
  void step();
  // Publishes the counters (step() does it itself, before the callbacks), then calls the
  // on_publish hook with them on this thread (the Engine keeps its queue count with it).
  void publish_metrics();
  void set_on_publish(std::function<void(const EngineMetrics&)> hook) {
    on_publish_ = std::move(hook);
  }

  EngineMetrics metrics() const;
  const MemoryLedger& ledger() const { return ledger_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelConfig& model_config() const { return model_->config(); }
  int32_t max_model_len() const { return sched_config_.max_model_len; }
  const EngineConfig& config() const { return config_; }
  int n_threads() const { return pool_.n_threads(); }
  // The step-cost curve T(n) measured so far (speculation's adaptive rule reads it).
  const StepCostTable& step_cost() const { return sched_.step_cost(); }
  // The scheduler's block tables (tests: dropped windows, invariants).
  const KvCacheManager& kv() const { return sched_.kv(); }

  EngineCore(const EngineConfig& config, std::unique_ptr<Model> model,
             std::unique_ptr<Tokenizer> tokenizer, const EngineSizing& sizing,
             Scheduler scheduler, std::unique_ptr<BatchRunner> runner,
             std::unique_ptr<DraftModelRunner> drafter = nullptr);

  // The draft model's runner under --speculative draft, else null.
  const DraftModelRunner* drafter() const { return drafter_.get(); }

 private:
  struct Outgoing {
    RequestState* request;
    EngineEvent event;
  };

  void build_ledger(const EngineSizing& sizing);
  // engine_offload.cpp: creates the offload tiers the config asks for and hands them to the
  // scheduler's KV manager (kIo when the disk tier's directory cannot be made).
  Status attach_offload();
  // Tells the tiers how fast this step's forward computed its tokens (recompute rate).
  void note_forward_rate(double seconds);
  void log_ledger() const;

  // engine_draft.cpp: the batch, with the draft model's proposals when it has one.
  Status prepare_batch();
  int32_t pick_draft_token(size_t row, int32_t i, std::span<const float> logits,
                           std::span<float> q);
  SampleState* draft_sample_of_row(size_t row);
  // A sampled request under --spec-sampled-verify q: drafted from q and verified with it.
  bool drafts_from_q(const SampleState& s) const;
  std::span<const float> draft_q(size_t k, int32_t i) const;
  // engine_step.cpp: one step and its failures.
  void note_scheduled(EngineClock::time_point now);
  // engine_verify.cpp: sampling, speculative drafts verified position by position.
  void verify_slots();
  FinishReason verify_slot(size_t k, EngineClock::time_point now);
  // What a penalty reads: the slot's sample's tokens (the scheduler's), then `this_step`.
  std::span<const int32_t> sample_history(const SampleSlot& slot,
                                          std::span<const int32_t> this_step);
  void deliver();
  void fail_request(RequestState& r, const Status& status);
  void fail_scheduled(const Status& status);
  void forget_done();

  // engine_update.cpp: what each sampled token does to its sample (every stop rule).
  void ban_stop_tokens(std::span<float> logits) const;
  void update();
  FinishReason update_sample(RequestState& r, const SampleSlot& slot, int32_t token,
                             EngineClock::time_point now);
  void report_aborts();
  void finish_sample(RequestState& r, int32_t index, FinishReason why, int32_t token,
                     const std::string& stop_string, EngineClock::time_point now);

  // Immutable after construction.
  EngineConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  SchedulerConfig sched_config_;
  MemoryLedger ledger_;
  std::vector<int32_t> stop_tokens_;  // end-of-generation tokens and BOS
  int32_t n_vocab_ = 0;

  // The stepping thread only.
  Scheduler sched_;
  std::unique_ptr<BatchRunner> runner_;
  std::unique_ptr<DraftModelRunner> drafter_;  // --draft-model (--speculative draft or auto)
  ThreadPool pool_;
  std::unordered_map<RequestId, std::unique_ptr<RequestState>> requests_;
  SchedulerOutput out_;
  std::vector<int32_t> emitted_;    // this step's tokens, slot by slot (flat)
  std::vector<int32_t> n_emitted_;  // [samples] tokens of each slot in emitted_
  std::vector<int32_t> row_slot_;   // [rows] the sample slot of each row (-1: none), drafting
  double draft_pass_seconds_ = 0.0;  // this step's draft-model passes after the first
  std::vector<int32_t> history_;    // [max_model_len] sample_history's buffer
  std::vector<FinishReason> finishes_;
  std::vector<SchedulerEvent> sched_events_;
  std::vector<Outgoing> outbox_;
  std::vector<RequestId> done_ids_;
  int64_t prompt_tokens_total_ = 0;
  int64_t generation_tokens_total_ = 0;
  SpecDecodeCounters spec_;
  // The offload tiers (null without): io_ reads and writes runner_'s KV storage.
  std::unique_ptr<KvStorageBlockIo> offload_io_;
  std::unique_ptr<KvOffload> offload_;

  std::function<void(const EngineMetrics&)> on_publish_;
  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;
};

}  // namespace tally
