// One step of the engine core: schedule -> runner (copies, batch, forward) ->
// per-sample sampling and verification of drafts (engine_verify.cpp) -> update
// (engine_update.cpp) -> metrics -> callbacks. A failure is confined to the requests it
// touches: they end with kError and the next step goes on.
#include <algorithm>
#include <chrono>
#include <exception>

#include "base/log.h"
#include "engine/engine_core.h"

namespace tally {

void EngineCore::step() {
  const auto started = std::chrono::steady_clock::now();
  draft_pass_seconds_ = 0.0;
  sched_.schedule(out_);
  note_scheduled(EngineClock::now());
  Status st = prepare_batch();
  if (st.ok()) {
    const auto forward_start = EngineClock::now();
    st = runner_->forward(pool_);
    note_forward_rate(std::chrono::duration<double>(EngineClock::now() - forward_start).count());
  }
  if (st.ok()) {
    verify_slots();
  } else {
    // Every request of the step fails: the scheduler drops their (placeholder) tokens.
    emitted_.assign(out_.samples.size(), 0);
    n_emitted_.assign(out_.samples.size(), 1);
    finishes_.assign(out_.samples.size(), FinishReason::kNone);
    spdlog::error("engine: step {} failed: {}", out_.step, st.to_string());
    fail_scheduled(st);
  }
  update();
  // Speculation's step-cost curve T(n): the whole step, callbacks excluded, of steps whose
  // every position is a decode or a draft (one logits row and one sampling each). A prefill
  // position costs less (no logits row): its steps would make drafts look cheap. The draft
  // model's passes after its first are priced on their own (record_draft_pass_time). Only
  // an undrafted step tells the table how fast the machine is now (draft_length.h).
  const bool decode_only =
      std::all_of(out_.scheduled.begin(), out_.scheduled.end(),
                  [](const ScheduledSeq& row) { return row.n_tokens == row.n_draft + 1; });
  if (st.ok() && decode_only) {
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    sched_.record_step_time(out_.n_tokens, took.count() - draft_pass_seconds_,
                            out_.n_draft_tokens() > 0);
  }
  publish_metrics();  // before the callbacks: a caller that sees its end sees its blocks freed
  deliver();
  forget_done();
}

void EngineCore::note_scheduled(EngineClock::time_point now) {
  for (const ScheduledSeq& row : out_.scheduled) {
    auto it = requests_.find(row.request_id);
    if (it == requests_.end() || it->second->scheduled) continue;
    it->second->scheduled = true;
    it->second->first_scheduled = now;
    if (const Request* sr = sched_.find_request(row.request_id)) {
      it->second->cached_tokens = std::max(sr->num_cached_tokens, 0);
    }
    prompt_tokens_total_ += it->second->prompt_tokens;
  }
}

void EngineCore::fail_request(RequestState& r, const Status& status) {
  if (r.failed) return;
  r.failed = true;
  EngineEvent ev;
  ev.kind = EngineEventKind::kError;
  ev.request_id = r.id;
  ev.status = status;
  ev.request_done = true;
  outbox_.push_back({&r, std::move(ev)});
  // Its blocks go at the next step; the state goes when the scheduler has forgotten it.
  if (sched_.abort_request(r.id).ok()) return;
  done_ids_.push_back(r.id);
}

void EngineCore::fail_scheduled(const Status& status) {
  // Which request broke the step is unknown: every request in it ends with the error, the
  // others go on (the runner holds nothing of theirs: the next step's rows are complete).
  for (const ScheduledSeq& row : out_.scheduled) {
    auto it = requests_.find(row.request_id);
    if (it != requests_.end()) fail_request(*it->second, status);
  }
}

void EngineCore::deliver() {
  for (size_t i = 0; i < outbox_.size(); ++i) {
    Outgoing& o = outbox_[i];
    RequestState& r = *o.request;
    // Events queued before the request failed in an earlier callback are dropped.
    if (r.failed && o.event.kind != EngineEventKind::kError) continue;
    try {
      r.on_event(o.event);
    } catch (const std::exception& e) {
      if (o.event.kind == EngineEventKind::kError || o.event.request_done) continue;
      fail_request(r, make_error(ErrorCode::kInternal, "request {}: event callback threw: {}", r.id,
                                 e.what()));
    } catch (...) {
      if (o.event.kind == EngineEventKind::kError || o.event.request_done) continue;
      fail_request(r, make_error(ErrorCode::kInternal, "request {}: event callback threw", r.id));
    }
  }
  outbox_.clear();
}

void EngineCore::forget_done() {
  for (RequestId id : done_ids_) requests_.erase(id);
  done_ids_.clear();
}

}  // namespace tally
