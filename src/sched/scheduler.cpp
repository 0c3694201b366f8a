// Requests in and out of the scheduler's queues: validation, admission bookkeeping,
// preemption, aborts, counters.
#include "sched/scheduler.h"

#include <algorithm>

#include "base/check.h"

namespace tally {

bool Scheduler::WaitingOrder::operator()(const Request* a, const Request* b) const {
  const bool a_back = a->status != RequestStatus::kPreempted;
  const bool b_back = b->status != RequestStatus::kPreempted;
  if (a_back != b_back) return !a_back;  // preempted requests first
  if (a->order_key != b->order_key) return a->order_key < b->order_key;
  return a->arrival < b->arrival;
}

Status Scheduler::validate(const SchedulerConfig& config) {
  TALLY_RETURN_IF_ERROR(KvCacheManager::validate(config.kv));
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v > 0) return Status::ok_status();
    return make_error(ErrorCode::kInvalidArgument, "scheduler: {} is {} (must be > 0)", name, v);
  };
  TALLY_RETURN_IF_ERROR(positive(config.max_batched_tokens, "max_batched_tokens"));
  TALLY_RETURN_IF_ERROR(positive(config.max_seqs, "max_seqs"));
  TALLY_RETURN_IF_ERROR(positive(config.max_model_len, "max_model_len"));
  TALLY_RETURN_IF_ERROR(positive(config.max_waiting, "max_waiting"));
  TALLY_RETURN_IF_ERROR(config.spec.validate());
  if (config.aging_steps < 0) {
    return make_error(ErrorCode::kInvalidArgument, "scheduler: aging_steps is {} (must be >= 0)",
                      config.aging_steps);
  }
  return Status::ok_status();
}

Result<Scheduler> Scheduler::create(const SchedulerConfig& config) {
  TALLY_RETURN_IF_ERROR(validate(config));
  return Scheduler(config);
}

namespace {

KvCacheConfig scheduler_kv_config(const SchedulerConfig& config) {
  KvCacheConfig kv = config.kv;
  // Static batching reserves whole contexts per sample: nothing to share.
  if (config.policy == SchedulePolicy::kStatic) kv.enable_prefix_cache = false;
  return kv;
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config),
      kv_(scheduler_kv_config(config)),
      step_cost_(config.max_batched_tokens),
      draft_pass_cost_(config.max_seqs),
      draft_rng_(config.spec.random_length_seed) {
  config_.kv = scheduler_kv_config(config);
}

int32_t Scheduler::worst_case_blocks(const SchedulerConfig& config, const RequestSpec& spec) {
  // Blocks the request needs when it runs alone, counted the way schedule() counts them (a
  // copy-on-write per sample), so that a request that passes this check always fits alone.
  const int32_t bs = config.kv.block_size;
  const auto blocks_for = [bs](int64_t n) { return static_cast<int32_t>((n + bs - 1) / bs); };
  const int32_t prompt = static_cast<int32_t>(spec.prompt.size());
  const int32_t max_out = std::min(spec.max_tokens, config.max_model_len - prompt);
  const int32_t stored = prompt + max_out - 1;  // the last sampled token is never computed
  if (config.policy == SchedulePolicy::kStatic) {
    return spec.n * blocks_for(config.max_model_len);
  }
  // With the sliding window's blocks freed, a sample holds those from its window's first
  // position through the last token of its step (at most max_batched_tokens), one more where
  // the window starts mid-block (kv_cache_manager.h); `tally plan` counts the same.
  const int32_t window = config.kv.sliding_window;
  const int32_t step = std::min(config.max_batched_tokens, stored);
  const int32_t per_sample = window > 0 ? std::min(blocks_for(stored), blocks_for(int64_t{window} - 1 + step) + 1)
                                        : blocks_for(stored);
  if (spec.n == 1) return per_sample;
  const int32_t shared_full = prompt / bs;
  return std::min(blocks_for(prompt) + spec.n * (blocks_for(stored) - shared_full), spec.n * per_sample);
}

Status Scheduler::check_request(const SchedulerConfig& config, const RequestSpec& spec) {
  const int64_t prompt = static_cast<int64_t>(spec.prompt.size());
  if (prompt == 0) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt has no tokens").with_field("prompt");
  }
  if (prompt >= config.max_model_len) {
    return make_error(ErrorCode::kOutOfRange,
                      "the prompt has {} tokens, but this model's context is {} tokens (the "
                      "context holds {} tokens, prompt and output together: the prompt must be "
                      "shorter to leave room for output)",
                      prompt, config.max_model_len, config.max_model_len)
        .with_field("prompt");
  }
  if (spec.max_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens is {} (must be >= 1)",
                      spec.max_tokens)
        .with_field("max_tokens");
  }
  if (spec.n < 1 || spec.n > config.max_seqs) {
    return make_error(ErrorCode::kInvalidArgument, "n is {} (must be in [1, {}])", spec.n,
                      config.max_seqs)
        .with_field("n");
  }
  if (const int32_t blocks = worst_case_blocks(config, spec); blocks > config.kv.n_blocks) {
    return make_error(ErrorCode::kInvalidArgument,
                      "needs up to {} KV blocks running alone, the pool has {}", blocks,
                      config.kv.n_blocks)
        .with_field(spec.n > 1 ? "n" : "max_tokens");
  }
  return Status::ok_status();
}

Status Scheduler::add_request(RequestSpec spec) {
  const RequestId id = spec.id;
  if (requests_.count(id)) {
    return make_error(ErrorCode::kInvalidArgument, "request {}: id already in use", id);
  }
  if (Status st = check_request(config_, spec); !st.ok()) {
    return st.with_context(fmt::format("request {}", id));
  }
  if (static_cast<int64_t>(waiting_.size()) >= config_.max_waiting) {
    return make_error(ErrorCode::kResourceExhausted,
                      "request {}: {} requests already wait (max_waiting): try later", id,
                      waiting_.size());
  }
  auto r = std::make_unique<Request>();
  r->spec = std::move(spec);
  r->arrival = next_arrival_++;
  r->arrival_step = step_;
  r->order_key = config_.aging_steps > 0
                     ? int64_t{r->spec.priority} * config_.aging_steps + r->arrival_step
                     : r->spec.priority;
  r->samples.resize(r->spec.n);
  for (int32_t i = 0; i < r->spec.n; ++i) {
    r->samples[i].id = next_seq_id_++;
    r->samples[i].index = i;
  }
  r->n_live = r->spec.n;
  // Aging for the longest-prefix-first order: a request may be passed over by as many later
  // arrivals as the requests that stand between it and a free slot now, so its wait in
  // admissions stays under twice its first-come-first-served wait.
  const int32_t free_slots = std::max(0, config_.max_seqs - running_slots_);
  r->overtake_allowance = std::max(0, static_cast<int32_t>(waiting_.size()) - free_slots);
  waiting_.insert(r.get());
  requests_.emplace(id, std::move(r));
  return Status::ok_status();
}

Status Scheduler::abort_request(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return make_error(ErrorCode::kNotFound, "abort: request {} is unknown or finished", id);
  }
  if (!it->second->abort_pending) {
    it->second->abort_pending = true;
    pending_aborts_.push_back(id);
  }
  return Status::ok_status();
}

const Request* Scheduler::find_request(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.n_running = static_cast<int32_t>(running_.size());
  s.n_running_seqs = running_slots_;
  s.n_waiting = static_cast<int32_t>(waiting_.size());
  s.preemptions_total = preemptions_total_;
  s.steps = step_;
  s.kv_used_blocks = kv_.n_used_blocks();
  s.kv_free_blocks = kv_.n_free_blocks();
  s.kv_usage = kv_.usage();
  s.kv_tokens_stored = kv_tokens_stored_;
  s.kv_tokens_reserved = kv_tokens_reserved_;
  s.prefix_cache_queries = prefix_queries_;
  s.prefix_cache_hits = prefix_hits_;
  return s;
}

void Scheduler::make_running(Request& r) {
  r.status = RequestStatus::kRunning;
  auto before = [](const Request* a, const Request* b) {
    return a->order_key != b->order_key ? a->order_key < b->order_key : a->arrival < b->arrival;
  };
  running_.insert(std::upper_bound(running_.begin(), running_.end(), &r, before), &r);
  running_slots_ += r.n_live;
}

void Scheduler::remove_running(Request& r) {
  auto it = std::find(running_.begin(), running_.end(), &r);
  TALLY_CHECK(it != running_.end(), "request {} is not running", r.spec.id);
  running_.erase(it);
  running_slots_ -= r.n_live;
}

void Scheduler::free_request_kv(Request& r, std::vector<SeqId>& freed) {
  auto release = [&](Sequence& s) {
    if (kv_.contains(s.id)) {
      kv_.free(s.id);
      freed.push_back(s.id);
    }
    s.num_computed = 0;
  };
  for (Sequence& s : r.samples) release(s);
  if (r.in_carrier_stage()) {
    release(r.carrier);
    r.carrier = Sequence{};
  }
}

void Scheduler::preempt(Request& r, SchedulerOutput& out) {
  // Recompute: blocks go back to the pool, tokens stay; the request re-enters the queue at
  // its head and recomputes prompt + outputs when admitted again.
  remove_running(r);
  if (config_.swap_preemption) {
    for (Sequence& s : r.samples) {
      if (kv_.contains(s.id)) kv_.offload_sequence(s.id);
    }
    if (r.in_carrier_stage() && kv_.contains(r.carrier.id)) kv_.offload_sequence(r.carrier.id);
  }
  free_request_kv(r, out.freed_seq_ids);
  for (Sequence& s : r.samples) s.draft.clear();  // planned before it lost its blocks
  r.status = RequestStatus::kPreempted;
  ++r.n_preemptions;
  ++preemptions_total_;
  waiting_.insert(&r);
  out.preempted_request_ids.push_back(r.spec.id);
}

void Scheduler::process_aborts(SchedulerOutput& out) {
  for (RequestId id : pending_aborts_) {
    auto it = requests_.find(id);
    TALLY_CHECK(it != requests_.end(), "aborted request {} vanished", id);
    Request& r = *it->second;
    if (r.status == RequestStatus::kRunning) {
      remove_running(r);
    } else {
      waiting_.erase(&r);
    }
    free_request_kv(r, out.freed_seq_ids);
    for (Sequence& s : r.samples) {
      if (!s.live()) continue;
      s.finish = FinishReason::kAbort;
      --r.n_live;
      pending_events_.push_back({id, s.index, kNoToken, FinishReason::kAbort, r.n_live == 0});
    }
    out.finished_request_ids.push_back(id);
    requests_.erase(it);
  }
  pending_aborts_.clear();
}

}  // namespace tally
