// Sampling a step's slots, speculative drafts included. A slot whose row carries a draft of k
// tokens has k + 1 logits rows: position i holds the target's logits after the last known
// token and the first i draft tokens. Position by position, the sample's own sampler draws a
// token exactly as it would without speculation (same logits processing, penalties over the
// same history, min_tokens ban at the same count, one RNG draw), the token is applied at once
// (update_sample: every stop rule), and the walk goes on only while the token equals the
// draft token at that position (spec_verify.h: exact rejection sampling for one-hot drafts).
// Under --spec-sampled-verify q a sampled request's draft-model draft comes with its q
// (draft_q, engine_draft.cpp): the rejection sampling then uses the real q. After k matches
// the last position gives one bonus token.
#include <exception>

#include "sampling/spec_verify.h"

#include "engine/engine_core.h"

namespace tally {

void EngineCore::verify_slots() {
  const auto now = EngineClock::now();
  const size_t n_slots = out_.samples.size();
  emitted_.clear();
  n_emitted_.assign(n_slots, 0);
  finishes_.assign(n_slots, FinishReason::kNone);
  for (size_t k = 0; k < n_slots; ++k) {
    const size_t first = emitted_.size();
    finishes_[k] = verify_slot(k, now);
    // A failed or vanished request's slot keeps one placeholder: the scheduler drops it.
    if (emitted_.size() == first) emitted_.push_back(0);
    n_emitted_[k] = static_cast<int32_t>(emitted_.size() - first);
  }
}

FinishReason EngineCore::verify_slot(size_t k, EngineClock::time_point now) {
  const SampleSlot& slot = out_.samples[k];
  auto it = requests_.find(slot.request_id);
  if (it == requests_.end() || it->second->failed) return FinishReason::kNone;  // being aborted
  RequestState& r = *it->second;
  SampleState& s = r.samples[static_cast<size_t>(slot.seq_index)];
  const std::span<const int32_t> draft = out_.draft(out_.scheduled[static_cast<size_t>(slot.row)]);
  const auto n_draft = static_cast<int32_t>(draft.size());
  if (n_draft > 0) {
    ++spec_.drafts;
    spec_.draft_tokens += n_draft;
    s.spec_draft_tokens += n_draft;
  }
  const size_t first = emitted_.size();  // this slot's tokens so far: emitted_[first, ...)
  for (int32_t i = 0; i <= n_draft; ++i) {
    std::span<float> logits = runner_->slot_logits(k, i);
    // Slots sharing this row are samples of the same request at the same length, so masking
    // the shared row is right.
    if (s.n_generated < r.min_tokens) ban_stop_tokens(logits);
    const int32_t draft_token = i < n_draft ? draft[static_cast<size_t>(i)] : -1;
    SpecPositionResult verdict;
    FinishReason why = FinishReason::kNone;
    try {
      const std::span<const int32_t> history =
          s.sampler.reads_history()
              ? sample_history(slot, std::span<const int32_t>(emitted_).subspan(first))
              : std::span<const int32_t>();
      verdict = spec_verify_position(s.sampler, logits, history, draft_token, draft_q(k, i));
    } catch (const std::exception& e) {
      fail_request(r, make_error(ErrorCode::kInternal, "sampling failed: {}", e.what()));
      return FinishReason::kNone;
    }
    emitted_.push_back(verdict.token);
    try {
      why = update_sample(r, slot, verdict.token, now);
    } catch (const std::exception& ex) {
      fail_request(r, make_error(ErrorCode::kInternal, "request {}: {}", r.id, ex.what()));
      return FinishReason::kNone;
    }
    if (verdict.accepted) {
      ++spec_.accepted_tokens;
      ++spec_.accepted_per_pos[static_cast<size_t>(i)];
      ++s.spec_accepted_tokens;
    }
    if (why != FinishReason::kNone || !verdict.accepted) return why;
  }
  return FinishReason::kNone;
}

std::span<const int32_t> EngineCore::sample_history(const SampleSlot& slot,
                                                    std::span<const int32_t> this_step) {
  // The scheduler's tokens of the sample (its prompt, then its outputs before this step),
  // then the tokens this step gave it so far (verification appends them one by one).
  const Request* r = sched_.find_request(slot.request_id);
  if (r == nullptr) return {};
  const Sequence& seq = r->samples[static_cast<size_t>(slot.seq_index)];
  if (seq.output.empty() && this_step.empty()) return r->spec.prompt;
  history_.assign(r->spec.prompt.begin(), r->spec.prompt.end());
  history_.insert(history_.end(), seq.output.begin(), seq.output.end());
  history_.insert(history_.end(), this_step.begin(), this_step.end());
  return history_;
}

}  // namespace tally
