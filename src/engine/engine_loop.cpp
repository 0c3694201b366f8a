// The engine thread: sleep until there is work, take the queue in, step the core while any
// request is unfinished, publish the waiting count.
#include "engine/engine_impl.h"

#include "base/thread_name.h"

namespace tally {

bool EngineImpl::wait_for_work() {
  std::unique_lock<std::mutex> lock(mu_);
  const bool busy = core_->has_unfinished();
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
  const bool abort_all = abort_all_;
  abort_all_ = false;
  lock.unlock();
  take_submitted();
  if (abort_all) {
    // Shutdown: every request, queued or running, ends with kAbort at the next step.
    core_->abort_all();
  } else {
    for (RequestId id : cancels_taken_) core_->abort_request(id);  // unknown ids ignored
  }
  cancels_taken_.clear();
  return true;
}

void EngineImpl::take_submitted() {
  for (Submitted& s : taken_) {
    core_->add_request(s.id, std::move(s.request), s.seed, std::move(s.on_event), s.arrival);
  }
  taken_.clear();
}

void EngineImpl::loop() {
  name_this_thread("tally-engine");
  while (wait_for_work()) {
    if (core_->has_unfinished()) {
      core_->step();
    } else {
      core_->publish_metrics();
    }
  }
  // Stopped: anything still known was aborted above and has had its step.
  core_->publish_metrics();
}

}  // namespace tally
