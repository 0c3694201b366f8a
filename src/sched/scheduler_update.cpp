// A step's results: counters advance, sampled tokens are appended, the samples the caller
// ended free their blocks, carriers fork their samples, finished requests leave at once.
#include <algorithm>

#include "base/check.h"
#include "sched/scheduler.h"

namespace tally {

void Scheduler::end_sample(Request& r, Sequence& s, FinishReason why) {
  s.finish = why;
  if (kv_.contains(s.id)) {
    kv_.free(s.id);
    pending_freed_.push_back(s.id);
  }
  --r.n_live;
  --running_slots_;
  if (r.n_live == 0) done_.push_back(&r);
}

void Scheduler::fork_samples(Request& r) {
  // The carrier's blocks hold the whole prompt: every live sample shares them from here on
  // and recomputes only its own outputs (none on the first pass).
  for (Sequence& s : r.samples) {
    if (!s.live()) continue;
    kv_.fork(r.carrier.id, s.id);
    s.num_computed = r.prompt_len();
    s.runner_knows = false;
    s.table_sent = 0;
  }
  kv_.free(r.carrier.id);
  pending_freed_.push_back(r.carrier.id);
  r.carrier = Sequence{};
}

void Scheduler::retire(Request& r) {
  remove_running(r);
  free_request_kv(r, pending_freed_);
  pending_finished_.push_back(r.spec.id);
  requests_.erase(r.spec.id);
}

void Scheduler::update(const SchedulerOutput& out, std::span<const TokenId> sampled,
                       std::span<const FinishReason> finishes,
                       std::vector<SchedulerEvent>& events) {
  TALLY_CHECK(awaiting_update_ && out.step == step_,
              "update() for step {} but the scheduler is at step {}", out.step, step_);
  TALLY_CHECK(out.scheduled.size() == rows_.size(), "update() with a foreign output");
  TALLY_CHECK(sampled.size() == out.samples.size(), "{} sampled tokens for {} sample slots",
              sampled.size(), out.samples.size());
  TALLY_CHECK(finishes.size() == sampled.size(), "{} finish reasons for {} sampled tokens",
              finishes.size(), sampled.size());
  events.clear();
  events.swap(pending_events_);
  done_.clear();
  // Requests aborted since schedule() keep their rows but drop the results.
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].request->abort_pending) continue;
    const ScheduledSeq& row = out.scheduled[i];
    rows_[i].seq->num_computed += row.n_tokens;
    cache_computed_blocks(*rows_[i].request, *rows_[i].seq, row.start, row.n_tokens);
  }
  for (size_t k = 0; k < sampled.size(); ++k) {
    const SampleSlot& slot = out.samples[k];
    Request& r = *rows_[slot.row].request;
    if (r.abort_pending) continue;
    Sequence& s = r.samples[slot.seq_index];
    TALLY_CHECK(s.id == slot.seq_id && s.live(), "sample slot {} for sequence {} is stale", k,
                slot.seq_id);
    s.output.push_back(sampled[k]);
    const FinishReason why = finishes[k];
    TALLY_CHECK(why != FinishReason::kNone ||
                    (static_cast<int32_t>(s.output.size()) < r.spec.max_tokens &&
                     r.known_tokens(s) < config_.max_model_len),
                "request {} sample {} is past max_tokens or the context but was not ended",
                r.spec.id, s.index);
    if (why != FinishReason::kNone) end_sample(r, s, why);
    events.push_back({r.spec.id, s.index, sampled[k], why, r.n_live == 0});
  }
  for (const RowRef& row : rows_) {
    Request& r = *row.request;
    if (row.seq == &r.carrier && !r.abort_pending && r.n_live > 0 &&
        r.carrier.num_computed == r.prompt_len()) {
      fork_samples(r);
    }
  }
  for (Request* r : done_) retire(*r);
  done_.clear();
  rows_.clear();
  awaiting_update_ = false;
  ++step_;
}

std::vector<SchedulerEvent> Scheduler::update(const SchedulerOutput& out,
                                              std::span<const TokenId> sampled,
                                              std::span<const FinishReason> finishes) {
  std::vector<SchedulerEvent> events;
  update(out, sampled, finishes, events);
  return events;
}

}  // namespace tally
