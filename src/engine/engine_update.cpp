// What a step's sampled tokens do: the one place where a sample ends. For each sample slot,
// in order: a stop token (end-of-generation or BOS, unless ignore_eos) ends it with kStop and
// no text; otherwise the token's text goes through the detokenizer and the stop strings, and
// a completed stop string ends it with kStop; otherwise max_tokens or a full context ends it
// with kLength. The scheduler is then told these decisions (Scheduler::update) and frees the
// ended samples' blocks. min_tokens acts before sampling: ban_stop_tokens() keeps stop tokens
// out of the logits until a sample has min_tokens tokens, so no rule here needs to know it.
#include <exception>
#include <limits>

#include "engine/engine_core.h"

namespace tally {

void EngineCore::ban_stop_tokens(std::span<float> logits) const {
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (int32_t id : stop_tokens_) logits[static_cast<size_t>(id)] = kBanned;
}

void EngineCore::update() {
  // verify_slots() applied every token already (update_sample); the scheduler learns the
  // tokens each sample kept and frees what ended.
  sched_.update(out_, emitted_, n_emitted_, finishes_, sched_events_);
  report_aborts();
}

FinishReason EngineCore::update_sample(RequestState& r, const SampleSlot& slot, int32_t token,
                                       EngineClock::time_point now) {
  SampleState& s = r.samples[static_cast<size_t>(slot.seq_index)];
  ++s.n_generated;
  ++generation_tokens_total_;
  if (!r.has_token) {
    r.has_token = true;
    r.first_token = now;
  }
  if (!r.ignore_eos && std::find(stop_tokens_.begin(), stop_tokens_.end(), token) !=
                           stop_tokens_.end()) {
    // A stop token has no text and is not sent as a kToken; kFinished names it.
    finish_sample(r, slot.seq_index, FinishReason::kStop, token, {}, now);
    return FinishReason::kStop;
  }
  EngineEvent ev;
  ev.kind = EngineEventKind::kToken;
  ev.request_id = r.id;
  ev.index = slot.seq_index;
  ev.token = token;
  StopMatcher::Update u;
  if (r.want_text) {
    u = s.stop.feed(s.detok.push(token));
    if (r.send_text) ev.text.assign(u.emit);
  }
  if (r.logprobs) {
    const SampleLogprobs& lp = s.sampler.last_logprobs();
    ev.logprob = lp.sampled.logprob;
    ev.top_logprobs.assign(lp.top.begin(), lp.top.end());
  }
  outbox_.push_back({&r, std::move(ev)});
  if (u.stopped) {
    finish_sample(r, slot.seq_index, FinishReason::kStop, -1,
                  r.stops->strings()[static_cast<size_t>(u.stop_index)], now);
    return FinishReason::kStop;
  }
  if (s.n_generated >= r.max_tokens || r.prompt_tokens + s.n_generated >= max_model_len()) {
    finish_sample(r, slot.seq_index, FinishReason::kLength, -1, {}, now);
    return FinishReason::kLength;
  }
  return FinishReason::kNone;
}

void EngineCore::report_aborts() {
  // The scheduler's events for sampled tokens repeat what update_sample() decided; the ones
  // without a token end samples of requests aborted since the last step.
  const auto now = EngineClock::now();
  for (const SchedulerEvent& e : sched_events_) {
    if (e.token != kNoToken) continue;
    auto it = requests_.find(e.request_id);
    if (it == requests_.end()) continue;
    RequestState& r = *it->second;
    if (r.failed) {
      if (e.request_done) done_ids_.push_back(r.id);
      continue;
    }
    if (r.samples[static_cast<size_t>(e.seq_index)].done) continue;
    try {
      finish_sample(r, e.seq_index, e.finish, -1, {}, now);
    } catch (const std::exception& ex) {
      fail_request(r, make_error(ErrorCode::kInternal, "request {}: {}", r.id, ex.what()));
    }
  }
}

void EngineCore::finish_sample(RequestState& r, int32_t index, FinishReason why, int32_t token,
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
  ev.cached_tokens = r.cached_tokens;
  ev.completion_tokens = s.n_generated;
  ev.spec_draft_tokens = s.spec_draft_tokens;
  ev.spec_accepted_tokens = s.spec_accepted_tokens;
  ev.timing = r.timing(now);
  if (ev.request_done) done_ids_.push_back(r.id);
  outbox_.push_back({&r, std::move(ev)});
}

}  // namespace tally
