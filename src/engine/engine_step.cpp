// One step of the engine core: schedule -> runner (tables, copies, batch, forward) ->
// per-sample sampling -> update (engine_update.cpp) -> metrics -> callbacks. A failure is
// confined to the requests it touches: they end with kError and the next step goes on.
#include <algorithm>
#include <exception>

#include "base/log.h"
#include "engine/engine_core.h"

namespace tally {

void EngineCore::step() {
  sched_.schedule(out_);
  note_scheduled(EngineClock::now());
  Status st = runner_->prepare(out_);
  if (st.ok()) st = runner_->forward(pool_);
  sampled_.assign(out_.samples.size(), 0);
  if (st.ok()) {
    sample_slots();
    runner_->commit(out_, sampled_);
  } else {
    spdlog::error("engine: step {} failed: {}", out_.step, st.to_string());
    fail_scheduled(st);
  }
  update();
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

void EngineCore::sample_slots() {
  for (size_t k = 0; k < out_.samples.size(); ++k) {
    const SampleSlot& slot = out_.samples[k];
    auto it = requests_.find(slot.request_id);
    if (it == requests_.end() || it->second->failed) continue;  // being aborted: result unused
    RequestState& r = *it->second;
    SampleState& s = r.samples[static_cast<size_t>(slot.seq_index)];
    std::span<float> logits = runner_->slot_logits(k);
    // Slots sharing this row are samples of the same request at the same length, so masking
    // the shared row is right.
    if (s.n_generated < r.min_tokens) ban_stop_tokens(logits);
    try {
      sampled_[k] = s.sampler.sample(logits, runner_->slot_history(out_, k));
    } catch (const std::exception& e) {
      fail_request(r, make_error(ErrorCode::kInternal, "sampling failed: {}", e.what()));
    }
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
  // others go on. Their sequences leave the runner through the next step's freed list.
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
