// The engine thread: sleep until there is work, take the queue in, step while any request is
// unfinished, publish the counters.
#include "base/log.h"
#include "engine/engine_impl.h"

namespace tally {

bool EngineImpl::wait_for_work() {
  std::unique_lock<std::mutex> lock(mu_);
  const bool busy = sched_.has_unfinished();
  if (!busy && inbox_.empty() && cancels_.empty()) {
    idle_ = true;
    idle_cv_.notify_all();
    if (stop_) return false;
    work_cv_.wait(lock, [this] { return stop_ || !inbox_.empty() || !cancels_.empty(); });
    if (stop_ && inbox_.empty()) return false;
  }
  idle_ = false;
  taken_.swap(inbox_);
  inbox_.clear();
  cancels_taken_.swap(cancels_);
  cancels_.clear();
  // Counted as waiting from here until the next publish, so submit() never lets the
  // scheduler's own queue overflow.
  queued_ += static_cast<int64_t>(taken_.size());
  if (abort_all_) {
    abort_all_ = false;
    lock.unlock();
    take_submitted(taken_);
    abort_everything();
    return true;
  }
  lock.unlock();
  take_submitted(taken_);
  for (RequestId id : cancels_taken_) (void)sched_.abort_request(id);  // unknown ids ignored
  cancels_taken_.clear();
  return true;
}

void EngineImpl::take_submitted(std::vector<Submitted>& batch) {
  for (Submitted& s : batch) {
    auto state = std::make_unique<RequestState>(RequestState::make(
        s.id, s.request, s.seed, std::move(s.on_event), *tokenizer_, n_vocab_, s.arrival));
    RequestState& r = *state;
    requests_.emplace(s.id, std::move(state));
    if (Status st = sched_.add_request(std::move(s.spec)); !st.ok()) {
      fail_request(r, st);  // submit() checked everything it could; this is a backstop
    }
  }
  batch.clear();
  deliver();
  forget_done();
}

void EngineImpl::abort_everything() {
  // Shutdown: every request, queued or running, ends with kAbort at the next step.
  for (auto& [id, r] : requests_) (void)sched_.abort_request(id);
}

void EngineImpl::publish_metrics() {
  const SchedulerStats st = sched_.stats();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_ = st.n_waiting;
  }
  std::lock_guard<std::mutex> lock(metrics_mu_);
  EngineMetrics& m = metrics_;
  m.num_requests_running = st.n_running;
  m.num_requests_waiting = st.n_waiting;
  m.kv_cache_usage = st.kv_usage;
  m.num_preemptions_total = st.preemptions_total;
  m.prompt_tokens_total = prompt_tokens_total_;
  m.generation_tokens_total = generation_tokens_total_;
  m.steps_total = st.steps;
  m.kv_blocks_total = sched_.kv().n_blocks();
  m.kv_blocks_free = st.kv_free_blocks;
  m.kv_utilization = st.kv_utilization();
}

void EngineImpl::loop() {
  while (wait_for_work()) {
    if (sched_.has_unfinished()) step();
    publish_metrics();
  }
  // Stopped: anything still known was aborted above and has had its step; drop what is left.
  publish_metrics();
}

}  // namespace tally
