// One step of the engine thread: schedule -> runner (tables, copies, batch, forward) ->
// per-sample sampling -> scheduler update -> events (text, stop strings, usage, timing) ->
// callbacks. A failure is confined to the requests it touches: they end with kError and
// the loop goes on.
#include <cmath>
#include <exception>
#include <limits>

#include "base/log.h"
#include "engine/engine_impl.h"

namespace tally {

void EngineImpl::step() {
  sched_.schedule(out_);
  const auto now = EngineClock::now();
  for (const ScheduledSeq& row : out_.scheduled) {
    auto it = requests_.find(row.request_id);
    if (it == requests_.end() || it->second->scheduled) continue;
    it->second->scheduled = true;
    it->second->first_scheduled = now;
    prompt_tokens_total_ += it->second->prompt_tokens;
  }
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
  sched_.update(out_, sampled_, sched_events_);
  translate_events();
  publish_metrics();  // before the callbacks: a caller that sees its end sees its blocks freed
  deliver();
  forget_done();
}

void EngineImpl::sample_slots() {
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < out_.samples.size(); ++k) {
    const SampleSlot& slot = out_.samples[k];
    auto it = requests_.find(slot.request_id);
    if (it == requests_.end() || it->second->failed) continue;  // being aborted: result unused
    RequestState& r = *it->second;
    SampleState& s = r.samples[static_cast<size_t>(slot.seq_index)];
    std::span<float> logits = runner_->slot_logits(k);
    // min_tokens: end-of-generation tokens cannot be drawn yet. Slots sharing this row are
    // samples of the same request at the same length, so masking the shared row is right.
    if (s.n_generated < r.min_tokens) {
      for (int32_t id : stop_tokens_) logits[static_cast<size_t>(id)] = kBanned;
    }
    try {
      sampled_[k] = s.sampler.sample(logits, runner_->slot_history(out_, k));
    } catch (const std::exception& e) {
      fail_request(r, make_error(ErrorCode::kInternal, "sampling failed: {}", e.what()));
    }
  }
}

void EngineImpl::translate_events() {
  const auto now = EngineClock::now();
  for (const SchedulerEvent& e : sched_events_) {
    auto it = requests_.find(e.request_id);
    if (it == requests_.end()) continue;
    RequestState& r = *it->second;
    if (r.failed) {
      if (e.request_done) done_ids_.push_back(r.id);
      continue;
    }
    SampleState& s = r.samples[static_cast<size_t>(e.seq_index)];
    if (s.done) continue;
    try {
      if (e.token != kNoToken) on_token(r, e, now);
      if (e.finish != FinishReason::kNone && !s.done) {
        finish_sample(r, e.seq_index, e.finish, e.finish == FinishReason::kStop ? e.token : -1, {},
                      now);
      }
    } catch (const std::exception& ex) {
      fail_request(r, make_error(ErrorCode::kInternal, "request {}: {}", r.id, ex.what()));
    }
  }
}

void EngineImpl::on_token(RequestState& r, const SchedulerEvent& e, EngineClock::time_point now) {
  SampleState& s = r.samples[static_cast<size_t>(e.seq_index)];
  ++s.n_generated;
  ++generation_tokens_total_;
  if (!r.has_token) {
    r.has_token = true;
    r.first_token = now;
  }
  if (e.finish == FinishReason::kStop) return;  // a stop token: no text, no kToken
  EngineEvent ev;
  ev.kind = EngineEventKind::kToken;
  ev.request_id = r.id;
  ev.index = e.seq_index;
  ev.token = e.token;
  StopMatcher::Update u;
  if (r.want_text) {
    u = s.stop.feed(s.detok.push(e.token));
    if (r.send_text) ev.text.assign(u.emit);
  }
  if (r.logprobs) {
    const SampleLogprobs& lp = s.sampler.last_logprobs();
    ev.logprob = lp.sampled.logprob;
    ev.top_logprobs.assign(lp.top.begin(), lp.top.end());
  }
  outbox_.push_back({&r, std::move(ev)});
  if (u.stopped) {
    // A stop string ends this sample now, whatever the scheduler decided for the token.
    if (e.finish == FinishReason::kNone) {
      Status st = sched_.finish_sample(r.id, e.seq_index, FinishReason::kStop);
      if (!st.ok()) spdlog::warn("engine: {}", st.to_string());
    }
    finish_sample(r, e.seq_index, FinishReason::kStop, -1,
                  r.stop_strings[static_cast<size_t>(u.stop_index)], now);
  }
}

void EngineImpl::finish_sample(RequestState& r, int32_t index, FinishReason why, int32_t token,
                               const std::string& stop_string, EngineClock::time_point now) {
  SampleState& s = r.samples[static_cast<size_t>(index)];
  s.done = true;
  --r.n_live;
  EngineEvent ev;
  ev.kind = EngineEventKind::kFinished;
  ev.request_id = r.id;
  ev.index = index;
  ev.token = token;
  ev.finish = why;
  ev.stop_string = stop_string;
  if (r.want_text && !s.stop.stopped()) {
    // What was held back is final now: an unfinished character, a partial stop string.
    const std::string tail = s.detok.flush();
    std::string text(s.stop.feed(tail).emit);
    if (!s.stop.stopped()) text += s.stop.flush();
    if (r.send_text) ev.text = std::move(text);
  }
  ev.request_done = r.n_live == 0;
  ev.prompt_tokens = r.prompt_tokens;
  ev.completion_tokens = s.n_generated;
  ev.timing = r.timing(now);
  if (ev.request_done) done_ids_.push_back(r.id);
  outbox_.push_back({&r, std::move(ev)});
}

void EngineImpl::fail_request(RequestState& r, const Status& status) {
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

void EngineImpl::fail_scheduled(const Status& status) {
  // Which request broke the step is unknown: every request in it ends with the error, the
  // others go on. Their sequences leave the runner through the next step's freed list.
  for (const ScheduledSeq& row : out_.scheduled) {
    auto it = requests_.find(row.request_id);
    if (it != requests_.end()) fail_request(*it->second, status);
  }
}

void EngineImpl::deliver() {
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

void EngineImpl::forget_done() {
  for (RequestId id : done_ids_) requests_.erase(id);
  done_ids_.clear();
}

}  // namespace tally
