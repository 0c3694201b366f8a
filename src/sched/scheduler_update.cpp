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
  ones_.assign(sampled.size(), 1);
  update(out, sampled, ones_, finishes, events);
}

void Scheduler::observe_draft_guess(Sequence& s, const SchedulerOutput& out,
                                    const ScheduledSeq& row, std::span<const TokenId> got) {
  // Each guessed position up to the first miss is one trial, drafted or not: a sequence that
  // does not draft still learns whether drafting would have paid. A draft model's guess is
  // known only where it drafted (the engine wrote it into the output).
  const bool model = s.draft_by_model;
  const std::span<const TokenId> guess =
      model ? (row.draft_by_model ? out.draft(row) : std::span<const TokenId>{})
            : std::span<const TokenId>(s.draft_guess);
  AcceptanceEstimate& a = model ? s.model_acceptance : s.acceptance;
  PooledAcceptance& pooled = model ? pooled_model_acceptance_ : pooled_ngram_acceptance_;
  const size_t n = std::min(got.size(), guess.size());
  for (size_t j = 0; j < n; ++j) {
    const bool hit = got[j] == guess[j];
    a.observe(hit, pooled.alpha);
    pooled.observe(hit);
    if (!hit) break;
  }
}

void Scheduler::advance_rows(const SchedulerOutput& out) {
  for (size_t i = 0; i < rows_.size(); ++i) {
    Request& r = *rows_[i].request;
    if (r.abort_pending) continue;
    Sequence& s = *rows_[i].seq;
    const ScheduledSeq& row = out.scheduled[i];
    int32_t computed = row.n_tokens;
    if (row.n_draft > 0) {
      // The last known token's position and the accepted drafts' stay; the rejected ones are
      // rolled back before any block is indexed, so no cached block holds a rejected token.
      const int32_t emitted = row_emitted_[i];
      TALLY_CHECK(emitted >= 1 && emitted <= row.n_draft + 1,
                  "row {} of sequence {} got {} tokens for a draft of {}", i, s.id, emitted,
                  row.n_draft);
      computed = row.n_tokens - row.n_draft + (emitted - 1);
      if (computed < row.n_tokens) kv_.truncate(s.id, row.start + computed);
    }
    s.draft.clear();
    s.draft_guess.clear();
    s.draft_len = 0;
    s.draft_by_model = false;
    s.num_computed += computed;
    cache_computed_blocks(r, s, row.start, computed);
  }
}

void Scheduler::update(const SchedulerOutput& out, std::span<const TokenId> tokens,
                       std::span<const int32_t> n_emitted, std::span<const FinishReason> finishes,
                       std::vector<SchedulerEvent>& events) {
  TALLY_CHECK(awaiting_update_ && out.step == step_,
              "update() for step {} but the scheduler is at step {}", out.step, step_);
  TALLY_CHECK(out.scheduled.size() == rows_.size(), "update() with a foreign output");
  TALLY_CHECK(n_emitted.size() == out.samples.size(), "{} token counts for {} sample slots",
              n_emitted.size(), out.samples.size());
  TALLY_CHECK(finishes.size() == n_emitted.size(), "{} finish reasons for {} sample slots",
              finishes.size(), n_emitted.size());
  events.clear();
  events.swap(pending_events_);
  done_.clear();
  // Requests aborted since schedule() keep their rows but drop the results. First the tokens
  // go to their samples (a row's accepted drafts must be known before its blocks are
  // indexed), then the rows advance, then the samples end: a finished sample's last blocks
  // are indexed before they are freed.
  row_emitted_.assign(rows_.size(), 0);
  size_t at = 0;
  for (size_t k = 0; k < n_emitted.size(); ++k) {
    const SampleSlot& slot = out.samples[k];
    const auto n = static_cast<size_t>(n_emitted[k]);
    TALLY_CHECK(at + n <= tokens.size(), "slot {} has {} tokens past the {} given", k, n,
                tokens.size());
    const std::span<const TokenId> got = tokens.subspan(at, n);
    at += n;
    Request& r = *rows_[slot.row].request;
    if (r.abort_pending) continue;
    Sequence& s = r.samples[slot.seq_index];
    TALLY_CHECK(s.id == slot.seq_id && s.live(), "sample slot {} for sequence {} is stale", k,
                slot.seq_id);
    TALLY_CHECK(n >= 1 && static_cast<int32_t>(n) <= out.scheduled[slot.row].n_draft + 1,
                "sample slot {} got {} tokens", k, n);
    s.output.insert(s.output.end(), got.begin(), got.end());
    row_emitted_[slot.row] = static_cast<int32_t>(n);
    observe_draft_guess(s, out, out.scheduled[slot.row], got);
  }
  advance_rows(out);
  at = 0;
  for (size_t k = 0; k < n_emitted.size(); ++k) {
    const SampleSlot& slot = out.samples[k];
    const std::span<const TokenId> got = tokens.subspan(at, static_cast<size_t>(n_emitted[k]));
    at += got.size();
    Request& r = *rows_[slot.row].request;
    if (r.abort_pending) continue;
    Sequence& s = r.samples[slot.seq_index];
    const FinishReason why = finishes[k];
    TALLY_CHECK(why != FinishReason::kNone ||
                    (static_cast<int32_t>(s.output.size()) < r.spec.max_tokens &&
                     r.known_tokens(s) < config_.max_model_len),
                "request {} sample {} is past max_tokens or the context but was not ended",
                r.spec.id, s.index);
    if (why != FinishReason::kNone) end_sample(r, s, why);
    for (size_t j = 0; j < got.size(); ++j) {
      const bool last = j + 1 == got.size();
      events.push_back({r.spec.id, s.index, got[j], last ? why : FinishReason::kNone,
                        last && r.n_live == 0});
    }
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
