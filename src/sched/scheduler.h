// The iteration-level scheduler: each step decides which sequences run and how many tokens
// each computes, under a token budget and a sequence cap, and owns the KV block tables.
//
// One counter per sequence (num_computed) chases its known tokens (prompt + outputs). A step
// gives a sequence 1 token when one is left (decoding) or a chunk of what is left (prefill,
// or recompute after preemption): no prefill/decode modes. Order within a step:
//   1. aborts are freed;
//   2. running requests, most important first, each sequence its tokens; every sequence that
//      needs exactly one token is promised it before any chunk takes the rest of the budget,
//      so decodes keep flowing beside a long prefill. When the blocks for a request's tokens
//      are short, the least important running request is preempted (recompute: its blocks are
//      freed, its tokens kept, it goes back to the head of the queue), until they fit or only
//      the request itself is left, which then preempts itself;
//   3. if nobody was preempted, waiting requests are admitted in queue order while the budget,
//      the sequence cap and the KV watermark allow (head-of-line: no skipping). With the
//      prefix cache on, a request starts at its longest cached prefix (full blocks) and the
//      queue order bends: see "Prefix cache" below.
// Importance ("order key", smaller first): priority with aging. With aging_steps = A > 0 the
// key is priority * A + arrival step, so waiting A steps is worth one priority level and a
// low-priority request cannot starve; A = 0 orders by priority alone. Ties go to the earlier
// arrival. The queue serves preempted requests first, then by key.
//
// Prefix cache (kv.enable_prefix_cache, continuous policy only): full blocks are indexed
// when their KV is computed (update()); admission matches the prompt-stage tokens against the
// index, adopts the hits (they cost no budget; evictable hits count against free blocks) and
// schedules from the first uncached token (at least one token is always computed: its logits
// are sampled). Among the first waiting requests of the head's priority, the one with the
// longest cached prefix is admitted first (ties: queue order), but each request may be passed
// over by at most as many later ones as stood between it and a free sequence slot when it
// arrived (then it must go next), so nothing starves and no wait grows past about twice its
// first-come-first-served wait. A request whose first uncached block is being computed by a
// request admitted before it in this step, or by a running request still computing its prompt,
// waits (one step, or until that prompt is computed) and then hits instead of computing it
// twice.
//
// Speculation (spec.enabled(), continuous policy only): a sequence that would decode one
// token instead computes its last token plus a draft of up to spec.num_speculative_tokens
// tokens (ngram_draft.h), as one row with n_draft > 0. Drafts take only budget left over
// after one token for every decode of the step, never more than max_tokens or the context
// can still use, and never cost a preemption: when blocks are short they are dropped first.
// update() gets 1..n_draft + 1 tokens for such a row (the accepted drafts, then the target's
// own token); the rejected positions are rolled back (KvCacheManager::truncate) before any
// block is indexed for the prefix cache.
//
// The static policy is the classic baseline: a batch of up to max_seqs requests is admitted
// together only when the previous batch has completely finished, and each sample reserves
// blocks for a whole context (max_model_len) at admission. Same output, same runner.
//
// Call schedule() then update() once per step, always in pairs (also for an empty output).
// Thread rules: not thread-safe; the engine thread alone calls everything.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_cache_manager.h"
#include "sched/ngram_draft.h"
#include "sched/request.h"
#include "sched/scheduler_output.h"

namespace tally {

enum class SchedulePolicy : uint8_t { kContinuous, kStatic };

struct SchedulerConfig {
  SchedulePolicy policy = SchedulePolicy::kContinuous;
  int32_t max_batched_tokens = 2048;  // token budget of one step
  int32_t max_seqs = 64;              // sequences (batch rows) running at once
  int32_t max_model_len = 2048;       // context: prompt + output tokens of a sequence
  int32_t max_waiting = 1024;         // queue limit: add_request() fails past it
  int32_t aging_steps = 256;          // steps of waiting worth one priority level; 0 = off
  KvCacheConfig kv;  // kv.enable_prefix_cache: see above (ignored by the static policy)
  // Swap preemption: a preempted request's cached blocks are also copied to the offload
  // tiers (set_kv_offload) before they are freed, so that its resume finds them even after
  // the pool evicted them. Recompute (false) leaves them to the pool's LRU alone.
  bool swap_preemption = false;
  SpecConfig spec;   // speculative decoding: see "Speculation" above (continuous policy only)
};

inline constexpr TokenId kNoToken = -1;

struct SchedulerEvent {
  RequestId request_id = 0;
  int32_t seq_index = 0;  // which sample
  TokenId token = kNoToken;  // the token appended; kNoToken when the event only ends it
  FinishReason finish = FinishReason::kNone;  // kNone while the sample goes on
  bool request_done = false;  // the request's last sample ended: the scheduler forgot it
};

// Counters the engine exports.
struct SchedulerStats {
  int32_t n_running = 0;       // requests
  int32_t n_running_seqs = 0;  // sequence slots they hold
  int32_t n_waiting = 0;       // requests, preempted ones included
  int64_t preemptions_total = 0;
  int64_t steps = 0;
  int32_t kv_used_blocks = 0;
  int32_t kv_free_blocks = 0;
  double kv_usage = 0.0;  // used blocks / all blocks
  // Summed over steps (sampled when each step's blocks are allocated): tokens held by
  // sequences, and slots in used blocks. Their ratio is the KV utilization a benchmark
  // prints; sharing (n > 1) can push it past 1.
  int64_t kv_tokens_stored = 0;
  int64_t kv_tokens_reserved = 0;
  // Prefix cache, in tokens, per admission (a preempted request counts again when it comes
  // back): tokens looked up (the prompt-stage tokens) and tokens found cached.
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  double kv_utilization() const {
    return kv_tokens_reserved == 0 ? 0.0
                                   : static_cast<double>(kv_tokens_stored) / kv_tokens_reserved;
  }
};

class Scheduler {
 public:
  static Status validate(const SchedulerConfig& config);
  static Result<Scheduler> create(const SchedulerConfig& config);
  Scheduler(Scheduler&&) noexcept = default;
  Scheduler& operator=(Scheduler&&) noexcept = default;

  // Refuses a request that check_request() refuses, a duplicate id (kInvalidArgument), and
  // one past max_waiting waiting requests (kResourceExhausted: back-pressure, try later).
  Status add_request(RequestSpec spec);
  // What the scheduler alone can judge of a request, from the config only (so a caller on
  // another thread can refuse it at once): the prompt against the context (kOutOfRange, both
  // lengths named), and kInvalidArgument for an empty prompt, max_tokens < 1, n outside
  // [1, max_seqs], or more KV than the whole pool running alone. Each error names its
  // RequestSpec field (Status::field).
  static Status check_request(const SchedulerConfig& config, const RequestSpec& spec);
  // Marks the request; its blocks are freed, and its end reported, at the next schedule().
  // kNotFound for an unknown or finished request. Aborting twice is fine.
  Status abort_request(RequestId id);
  // Fills `out` (cleared first, capacity kept) with this step's plan.
  void schedule(SchedulerOutput& out);
  SchedulerOutput schedule();
  // `sampled[k]` is the token for out.samples[k] and `finishes[k]` what the caller decided
  // it does to its sample (EngineCore::update applies every stop rule; a sample must end by
  // max_tokens or a full context at the latest: checked). Advances counters, appends tokens,
  // frees the blocks of ended samples and finished requests at once. `events` (cleared
  // first) gets the ends of requests aborted since the last update, then one event per
  // sampled token.
  void update(const SchedulerOutput& out, std::span<const TokenId> sampled,
              std::span<const FinishReason> finishes, std::vector<SchedulerEvent>& events);
  // The same with several tokens per slot (speculation): `n_emitted[k]` tokens of `tokens`
  // (slot order, flat) belong to slot k; 1 for a row without a draft, 1..n_draft + 1 for a
  // row with one (the accepted draft tokens, then one more). One event per token; the
  // slot's finish goes with its last.
  void update(const SchedulerOutput& out, std::span<const TokenId> tokens,
              std::span<const int32_t> n_emitted, std::span<const FinishReason> finishes,
              std::vector<SchedulerEvent>& events);
  std::vector<SchedulerEvent> update(const SchedulerOutput& out, std::span<const TokenId> sampled,
                                     std::span<const FinishReason> finishes);

  bool has_unfinished() const { return !requests_.empty(); }
  const Request* find_request(RequestId id) const;  // nullptr once finished
  SchedulerStats stats() const;
  const KvCacheManager& kv() const { return kv_; }
  // The offload tiers below the pool (KvCacheManager::set_offload; not owned).
  void set_kv_offload(KvOffload* offload) { kv_.set_offload(offload); }
  // Test hook: every prefix-cache key collides (KvCacheManager::force_prefix_key_for_test).
  void force_prefix_key_for_test(std::optional<PrefixKey> key) {
    kv_.force_prefix_key_for_test(key);
  }
  const SchedulerConfig& config() const { return config_; }
  // Speculation's step-cost curve: the engine reports each step's positions and wall time
  // (draft_length.h) and whether any of them were drafts; the adaptive draft length reads it.
  void record_step_time(int32_t positions, double seconds, bool drafted = false) {
    step_cost_.record(positions, seconds, drafted);
  }
  const StepCostTable& step_cost() const { return step_cost_; }
  // Where a new sequence's n-gram acceptance estimate starts (draft_length.h).
  float pooled_ngram_acceptance() const { return pooled_ngram_acceptance_.alpha; }
  // The draft model's cost per pass by its rows (a pass after the step's first: draft tokens
  // only), reported by the engine; the adaptive rule prices model drafts with it.
  void record_draft_pass_time(int32_t rows, double seconds) {
    draft_pass_cost_.record(rows, seconds);
  }
  const StepCostTable& draft_pass_cost() const { return draft_pass_cost_; }

 private:
  explicit Scheduler(const SchedulerConfig& config);

  struct WaitingOrder {
    bool operator()(const Request* a, const Request* b) const;
  };
  struct RowRef {  // what scheduled row i of the last output is, for update()
    Request* request;
    Sequence* seq;
  };
  struct PlannedRow {
    Sequence* seq;
    int32_t n_tokens;
  };

  // scheduler.cpp: requests in and out of the queues.
  static int32_t worst_case_blocks(const SchedulerConfig& config, const RequestSpec& spec);
  void make_running(Request& r);
  void remove_running(Request& r);
  void free_request_kv(Request& r, std::vector<SeqId>& freed);
  void preempt(Request& r, SchedulerOutput& out);
  void process_aborts(SchedulerOutput& out);
  // scheduler_step.cpp: one step's plan.
  template <typename Fn>
  void for_each_schedulable(Request& r, Fn&& fn);
  int32_t remaining(const Request& r, const Sequence& s) const;
  int32_t count_decodes(Request& r);
  void plan_request(Request& r, int32_t budget, int32_t reserved_after);
  int32_t plan_draft(Request& r, Sequence& s, int32_t room);
  void guess_draft(Request& r, Sequence& s);
  void choose_draft_lengths_for_step();
  void observe_draft_guess(Sequence& s, const SchedulerOutput& out, const ScheduledSeq& row,
                           std::span<const TokenId> got);
  int32_t plan_blocks_needed() const;
  void drop_planned_drafts();
  bool schedule_running(SchedulerOutput& out, int32_t& budget);
  void admit_waiting(SchedulerOutput& out, int32_t& budget);
  // scheduler_prefix.cpp: the prefix cache's part of admission and update.
  struct WaitingCandidate {
    int32_t cached_tokens = 0;
    bool next_in_flight = false;  // its first uncached block is computed this step already
  };
  std::span<const TokenId> seq_tokens(const Request& r, const Sequence& s, int32_t n_tokens);
  std::span<const TokenId> stage_tokens(Request& r);
  Request* pick_waiting();
  WaitingCandidate candidate(Request& r);
  void note_overtakes(const Request& admitted);
  void note_running_prefills();
  void cache_computed_blocks(Request& r, Sequence& s, int32_t start, int32_t n_tokens);
  void admit_static_batch();
  void emit_row(SchedulerOutput& out, Request& r, Sequence& s, int32_t n_tokens,
                int32_t& budget);
  // scheduler_update.cpp: the step's results.
  void end_sample(Request& r, Sequence& s, FinishReason why);
  void advance_rows(const SchedulerOutput& out);
  void fork_samples(Request& r);
  void retire(Request& r);

  SchedulerConfig config_;
  KvCacheManager kv_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::set<Request*, WaitingOrder> waiting_;
  std::vector<Request*> running_;  // by (order_key, arrival): most important first
  int32_t running_slots_ = 0;      // live samples of running requests (<= max_seqs)
  std::vector<RequestId> pending_aborts_;
  std::vector<SeqId> pending_freed_;          // reported by the next schedule()
  std::vector<RequestId> pending_finished_;   // reported by the next schedule()
  std::vector<SchedulerEvent> pending_events_;  // abort ends, reported by the next update()
  std::vector<RowRef> rows_;          // [scheduled rows of the last output]
  std::vector<PlannedRow> plan_;      // scratch of schedule_running()
  std::vector<Request*> done_;        // scratch of update()
  std::vector<TokenId> token_scratch_;  // a sequence's tokens in one piece (prefix keys)
  std::vector<int32_t> row_emitted_;    // [rows] scratch of update(): tokens each row's slot got
  std::vector<int32_t> ones_;           // scratch of the one-token-per-slot update()
  PrefixMatch match_;                    // scratch of admit_waiting()
  StepCostTable step_cost_;              // speculation: T(n), fed by record_step_time()
  StepCostTable draft_pass_cost_;        // D(rows), fed by record_draft_pass_time()
  // Every sequence's trials together, per source: where a new sequence's estimate starts.
  PooledAcceptance pooled_ngram_acceptance_;
  PooledAcceptance pooled_model_acceptance_;
  std::mt19937_64 draft_rng_;            // DraftLengthRule::kRandomForTest
  std::vector<Sequence*> draft_seqs_;    // scratch of choose_draft_lengths_for_step()
  std::vector<DraftCandidate> draft_candidates_;
  std::vector<int32_t> draft_lens_;
  DraftChoiceScratch draft_choice_;
  std::vector<PrefixKey> in_flight_;     // first uncached blocks admitted this step
  bool awaiting_update_ = false;
  int64_t step_ = 0;
  int64_t next_seq_id_ = 0;
  int64_t next_arrival_ = 0;
  int64_t preemptions_total_ = 0;
  int64_t kv_tokens_stored_ = 0;
  int64_t kv_tokens_reserved_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
};

}  // namespace tally
