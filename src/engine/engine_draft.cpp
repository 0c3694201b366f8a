// The engine's side of the draft-model source (--speculative draft, draft_model_runner.h):
// the block copies are applied, the draft model proposes every speculating row's tokens,
// then the target's batch is filled with them. A greedy request's draft is the draft model's
// argmax (accepted while it equals the target's), and so is a sampled request's under
// --spec-sampled-verify token (the default: accepted while it equals the token the target
// draws as without speculation). Under q a sampled request's draft is drawn from q =
// softmax(draft logits / temperature) with the sample's own draft stream, and q is kept for
// the target's exact rejection sampling (engine_verify.cpp, sampling/spec_rejection.h).
#include <algorithm>
#include <cmath>

#include "engine/engine_core.h"

namespace tally {

namespace {

// The lowest id among the largest logits, as greedy sampling picks.
int32_t draft_argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// q = softmax(logits / temperature) into `q`, then the token whose running sum of q first
// exceeds u (one with q > 0).
int32_t draft_sample(std::span<const float> logits, float temperature, double u,
                     std::span<float> q) {
  const float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    q[i] = std::exp((logits[i] - top) / temperature);
    sum += q[i];
  }
  double cum = 0.0;
  int32_t pick = -1;
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = static_cast<float>(q[i] / sum);
    cum += q[i];
    if (pick < 0 && q[i] > 0.0f && cum > u) pick = static_cast<int32_t>(i);
  }
  return pick >= 0 ? pick : draft_argmax(logits);  // u in the rounding gap at the top
}

}  // namespace

Status EngineCore::prepare_batch() {
  if (!drafter_) return runner_->prepare(out_);
  TALLY_RETURN_IF_ERROR(runner_->apply(out_));
  row_slot_.assign(out_.scheduled.size(), -1);
  for (size_t k = 0; k < out_.samples.size(); ++k) {
    row_slot_[static_cast<size_t>(out_.samples[k].row)] = static_cast<int32_t>(k);
  }
  auto pick = [this](size_t row, int32_t i, std::span<const float> logits, std::span<float> q) {
    return pick_draft_token(row, i, logits, q);
  };
  TALLY_RETURN_IF_ERROR(drafter_->propose(out_, pool_, pick));
  // What the model's drafts cost, for the adaptive rule (draft_length.h); the step's T(n)
  // leaves it out.
  for (const DraftPassTime& p : drafter_->last_pass_times()) {
    sched_.record_draft_pass_time(p.rows, p.seconds);
    draft_pass_seconds_ += p.seconds;
  }
  return runner_->fill(out_);
}

bool EngineCore::drafts_from_q(const SampleState& s) const {
  return s.temperature != 0.0f && config_.spec.sampled_verify == SpecSampledVerify::kQ;
}

SampleState* EngineCore::draft_sample_of_row(size_t row) {
  const int32_t k = row < row_slot_.size() ? row_slot_[row] : -1;
  if (k < 0) return nullptr;
  const SampleSlot& slot = out_.samples[static_cast<size_t>(k)];
  auto it = requests_.find(slot.request_id);
  if (it == requests_.end() || it->second->failed) return nullptr;  // being aborted
  return &it->second->samples[static_cast<size_t>(slot.seq_index)];
}

int32_t EngineCore::pick_draft_token(size_t row, int32_t /*i*/, std::span<const float> logits,
                                     std::span<float> q) {
  SampleState* s = draft_sample_of_row(row);
  if (s == nullptr || !drafts_from_q(*s)) return draft_argmax(logits);
  return draft_sample(logits, s->temperature, s->draft_rng.next_double(), q);
}

std::span<const float> EngineCore::draft_q(size_t k, int32_t i) const {
  const SampleSlot& slot = out_.samples[k];
  const ScheduledSeq& row = out_.scheduled[static_cast<size_t>(slot.row)];
  if (!drafter_ || !row.draft_by_model || i >= row.n_draft) return {};
  auto it = requests_.find(slot.request_id);
  if (it == requests_.end()) return {};
  const SampleState& s = it->second->samples[static_cast<size_t>(slot.seq_index)];
  if (!drafts_from_q(s)) return {};  // the draft was the argmax: verified as one-hot
  return drafter_->draft_q(static_cast<size_t>(slot.row), i);
}

}  // namespace tally
