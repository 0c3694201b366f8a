// One step's plan: running requests first (with preemption), then admissions.
#include <algorithm>

#include "base/check.h"
#include "sched/scheduler.h"

namespace tally {

template <typename Fn>
void Scheduler::for_each_schedulable(Request& r, Fn&& fn) {
  if (r.in_carrier_stage()) {
    fn(r.carrier);
    return;
  }
  for (Sequence& s : r.samples) {
    if (s.live()) fn(s);
  }
}

int32_t Scheduler::remaining(const Request& r, const Sequence& s) const {
  const int32_t target = &s == &r.carrier ? r.prompt_len() : r.known_tokens(s);
  return target - s.num_computed;
}

int32_t Scheduler::count_decodes(Request& r) {
  int32_t n = 0;
  for_each_schedulable(r, [&](Sequence& s) { n += remaining(r, s) == 1 ? 1 : 0; });
  return n;
}

void Scheduler::plan_request(Request& r, int32_t budget, int32_t reserved_after) {
  // Sequences needing one token take it while any budget is left; a chunk takes what the
  // budget holds beyond one token for every decode still to come (this request's and later
  // ones'), so a long prefill never starves decodes. A draft takes only what is left beyond
  // the same promise.
  plan_.clear();
  int32_t own_decodes = count_decodes(r);
  for_each_schedulable(r, [&](Sequence& s) {
    const int32_t left = remaining(r, s);
    TALLY_DCHECK(left >= 1, "request {} sequence {} has nothing to compute", r.spec.id, s.id);
    s.draft.clear();
    int32_t n = 0;
    if (left == 1) {
      --own_decodes;
      n = budget > 0 ? 1 : 0;
      if (n == 1) n += plan_draft(r, s, budget - 1 - reserved_after - own_decodes);
    } else {
      n = std::clamp(budget - reserved_after - own_decodes, 0, left);
    }
    if (n > 0) {
      plan_.push_back({&s, n});
      budget -= n;
    }
  });
}

int32_t Scheduler::plan_draft(Request& r, Sequence& s, int32_t room) {
  if (!config_.spec.enabled() || config_.policy != SchedulePolicy::kContinuous ||
      &s == &r.carrier) {
    return 0;
  }
  const int32_t k = std::min(s.draft_len, room);
  if (k <= 0) return 0;
  s.draft.assign(s.draft_guess.begin(), s.draft_guess.begin() + k);
  return k;
}

void Scheduler::guess_draft(Request& r, Sequence& s) {
  // Every draft token may be accepted and then one more token follows: the sample must still
  // be allowed all of them (max_tokens, the context).
  const int32_t known = r.known_tokens(s);
  const int32_t out_room = r.spec.max_tokens - static_cast<int32_t>(s.output.size()) - 1;
  const int32_t ctx_room = config_.max_model_len - known - 1;
  const int32_t k = std::min({config_.spec.num_speculative_tokens, out_room, ctx_room});
  s.draft_guess.clear();
  s.draft_by_model = false;
  if (k <= 0) return;
  if (!r.spec.replay_draft.empty() && s.index == 0) {  // a benchmark's recorded continuation
    const auto from = std::min(s.output.size(), r.spec.replay_draft.size());
    const auto to = std::min(from + static_cast<size_t>(k), r.spec.replay_draft.size());
    s.draft_guess.assign(r.spec.replay_draft.begin() + static_cast<std::ptrdiff_t>(from),
                         r.spec.replay_draft.begin() + static_cast<std::ptrdiff_t>(to));
    return;
  }
  // A draft model proposes all k tokens after scheduling: placeholders until then. Under
  // auto it is the source only where the n-gram drafter finds no match.
  if (config_.spec.mode != SpecMode::kDraft) {
    s.draft_guess.resize(static_cast<size_t>(k));
    const int32_t got = ngram_draft(seq_tokens(r, s, known), config_.spec.ngram_min,
                                    config_.spec.ngram_max, s.draft_guess);
    s.draft_guess.resize(static_cast<size_t>(got));
    if (got > 0 || !config_.spec.has_draft_model()) return;
  }
  s.draft_guess.assign(static_cast<size_t>(k), 0);
  s.draft_by_model = true;
}

void Scheduler::choose_draft_lengths_for_step() {
  // Every decode of the running requests guesses; the rule then sets each one's draft_len for
  // the step's n0 = one position per decode (prefill chunks are not counted: the estimate errs
  // towards a smaller step, where drafts look dearer).
  draft_seqs_.clear();
  draft_candidates_.clear();
  for (Request* r : running_) {
    if (r->in_carrier_stage()) continue;
    for_each_schedulable(*r, [&](Sequence& s) {
      s.draft_len = 0;
      s.draft_guess.clear();
      if (remaining(*r, s) != 1) return;
      guess_draft(*r, s);
      draft_seqs_.push_back(&s);
      // A draft model's acceptance is learned from its drafts (its guesses come after
      // scheduling), an n-gram guess's from every guess, drafted or not.
      draft_candidates_.push_back(
          {s.draft_by_model ? s.model_acceptance.estimate(pooled_model_acceptance_.alpha)
                            : s.acceptance.estimate(pooled_ngram_acceptance_.alpha),
           static_cast<int32_t>(s.draft_guess.size()), s.draft_by_model});
    });
  }
  draft_lens_.assign(draft_seqs_.size(), 0);
  switch (config_.spec.draft_length) {
    case DraftLengthRule::kAdaptive:
      choose_draft_lengths(step_cost_, static_cast<int32_t>(draft_seqs_.size()),
                           draft_candidates_, draft_lens_, draft_choice_, &draft_pass_cost_);
      break;
    case DraftLengthRule::kFixed:
      for (size_t i = 0; i < draft_lens_.size(); ++i) draft_lens_[i] = draft_candidates_[i].max_k;
      break;
    case DraftLengthRule::kRandomForTest:
      for (size_t i = 0; i < draft_lens_.size(); ++i) {
        std::uniform_int_distribution<int32_t> pick(0, draft_candidates_[i].max_k);
        draft_lens_[i] = pick(draft_rng_);
      }
      break;
  }
  for (size_t i = 0; i < draft_seqs_.size(); ++i) draft_seqs_[i]->draft_len = draft_lens_[i];
}

int32_t Scheduler::plan_blocks_needed() const {
  // Summed per sequence, a block shared by several samples counts one copy each: at most
  // one more than needed, and worst_case_blocks() counts the same way.
  int32_t need = 0;
  for (const PlannedRow& p : plan_) need += kv_.blocks_needed(p.seq->id, p.n_tokens);
  return need;
}

void Scheduler::drop_planned_drafts() {
  for (PlannedRow& p : plan_) {
    p.n_tokens -= static_cast<int32_t>(p.seq->draft.size());
    p.seq->draft.clear();
  }
}

bool Scheduler::schedule_running(SchedulerOutput& out, int32_t& budget) {
  if (config_.spec.enabled() && config_.policy == SchedulePolicy::kContinuous) {
    choose_draft_lengths_for_step();
  }
  int32_t reserved = 0;  // decode tokens promised to requests not yet visited
  for (Request* r : running_) reserved += count_decodes(*r);
  bool preempted = false;
  for (size_t i = 0; i < running_.size(); ++i) {
    Request& r = *running_[i];
    reserved -= count_decodes(r);
    plan_request(r, budget, reserved);
    if (plan_.empty()) continue;
    int32_t need = plan_blocks_needed();
    if (need > kv_.n_free_blocks()) {  // drafts never cost a preemption
      drop_planned_drafts();
      need = plan_blocks_needed();
    }
    while (need > kv_.n_free_blocks() && running_.back() != &r) {
      Request& victim = *running_.back();
      reserved -= count_decodes(victim);
      preempt(victim, out);
      preempted = true;
    }
    if (need > kv_.n_free_blocks()) {  // nobody less important is left
      preempt(r, out);
      preempted = true;
      break;
    }
    for (const PlannedRow& p : plan_) emit_row(out, r, *p.seq, p.n_tokens, budget);
  }
  return preempted;
}

void Scheduler::admit_waiting(SchedulerOutput& out, int32_t& budget) {
  in_flight_.clear();
  note_running_prefills();
  while (budget > 0 && !waiting_.empty()) {
    Request* picked = pick_waiting();
    if (picked == nullptr) break;  // the candidates wait for blocks computed this step
    Request& r = *picked;
    if (running_slots_ + r.n_live > config_.max_seqs) break;
    // The prompt-stage sequence: a carrier for n > 1, else sample 0 (recomputing its outputs
    // too after a preemption). Either holds no blocks yet. Its cached prefix (full blocks,
    // never the last token: that one's logits are sampled) costs no budget.
    const bool carrier = r.spec.n > 1;
    const std::span<const TokenId> tokens = stage_tokens(r);
    const int32_t todo = static_cast<int32_t>(tokens.size());
    kv_.match_prefix(tokens, r.spec.cache_salt, (todo - 1) / kv_.block_size(), match_);
    const int32_t n_hit = match_.n_blocks();
    int32_t cached = n_hit * kv_.block_size();
    const int32_t free_after_hits = kv_.n_free_blocks() - match_.n_evictable;
    int32_t n = std::min(todo - cached, budget);
    if (running_.empty()) {
      // Alone, it always fits eventually: take what the pool holds, ignore the watermark.
      n = static_cast<int32_t>(
          std::min<int64_t>(n, int64_t{free_after_hits} * kv_.block_size()));
      if (n <= 0) break;
    } else if (kv_.blocks_for(cached + n) - n_hit > free_after_hits - kv_.watermark_blocks()) {
      break;
    }
    note_overtakes(r);
    waiting_.erase(&r);
    if (carrier) {
      r.carrier = Sequence{};
      r.carrier.id = next_seq_id_++;
      r.carrier.index = -1;
    }
    Sequence& s = carrier ? r.carrier : r.samples[0];
    if (kv_.prefix_caching()) {
      // Fewer when a block in an offload tier is gone or damaged: computed instead (the
      // blocks counted for it above are then free for its tokens).
      if (n_hit > 0) cached = kv_.adopt_prefix(s.id, match_, tokens, r.spec.cache_salt);
      s.num_computed = cached;
      prefix_queries_ += todo;
      prefix_hits_ += cached;
      if (r.num_cached_tokens < 0) r.num_cached_tokens = std::min(cached, r.prompt_len());
      if (match_.has_next) in_flight_.push_back(match_.next_key);
    }
    make_running(r);
    emit_row(out, r, s, n, budget);
  }
}

void Scheduler::admit_static_batch() {
  // The whole previous batch must be gone; then every member reserves a full context.
  if (!running_.empty()) return;
  const int32_t ctx_blocks = kv_.blocks_for(config_.max_model_len);
  while (!waiting_.empty()) {
    Request& r = **waiting_.begin();
    if (running_slots_ + r.n_live > config_.max_seqs) break;
    if (int64_t{r.n_live} * ctx_blocks > kv_.n_free_blocks()) break;
    waiting_.erase(waiting_.begin());
    for (Sequence& s : r.samples) {
      if (!s.live()) continue;
      const Status reserved = kv_.reserve(s.id, config_.max_model_len);
      TALLY_CHECK(reserved.ok(), "{}", reserved.to_string());
    }
    make_running(r);
  }
}

void Scheduler::emit_row(SchedulerOutput& out, Request& r, Sequence& s, int32_t n_tokens,
                         int32_t& budget) {
  const Status appended = kv_.append(s.id, n_tokens, out.block_copies);
  TALLY_CHECK(appended.ok(), "planned append failed: {}", appended.to_string());
  const std::span<const BlockId> table = kv_.block_table(s.id);
  ScheduledSeq row;
  row.request_id = r.spec.id;
  row.seq_id = s.id;
  row.start = s.num_computed;
  row.n_tokens = n_tokens;
  row.n_draft = static_cast<int32_t>(s.draft.size());
  row.draft_begin = out.n_draft_tokens();
  row.draft_by_model = row.n_draft > 0 && s.draft_by_model;
  out.draft_tokens.insert(out.draft_tokens.end(), s.draft.begin(), s.draft.end());
  // The row in full: its known tokens and its whole block table (scheduler_output.h).
  row.tokens_begin = static_cast<int32_t>(out.token_ids.size());
  for (int32_t p = row.start; p < row.start + row.n_known(); ++p) {
    out.token_ids.push_back(r.token_at(s, p));
  }
  row.table_begin = static_cast<int32_t>(out.block_ids.size());
  row.table_count = static_cast<int32_t>(table.size());
  out.block_ids.insert(out.block_ids.end(), table.begin(), table.end());
  const int32_t row_index = static_cast<int32_t>(out.scheduled.size());
  out.scheduled.push_back(row);
  rows_.push_back({&r, &s});
  out.n_tokens += n_tokens;
  budget -= n_tokens;

  // A sequence samples when this step computes its last known token (then its draft). The
  // carrier's last prompt position feeds every sample that has no output yet.
  const int32_t end = s.num_computed + n_tokens - row.n_draft;
  if (&s == &r.carrier) {
    if (end != r.prompt_len()) return;
    for (Sequence& sample : r.samples) {
      if (sample.live() && sample.output.empty()) {
        out.samples.push_back({row_index, r.spec.id, sample.id, sample.index});
      }
    }
  } else if (end == r.known_tokens(s)) {
    out.samples.push_back({row_index, r.spec.id, s.id, s.index});
  }
}

void Scheduler::schedule(SchedulerOutput& out) {
  TALLY_CHECK(!awaiting_update_, "schedule() called twice without update()");
  out.clear();
  out.step = step_;
  rows_.clear();
  out.freed_seq_ids.swap(pending_freed_);
  out.finished_request_ids.swap(pending_finished_);
  process_aborts(out);
  int32_t budget = config_.max_batched_tokens;
  if (config_.policy == SchedulePolicy::kStatic) admit_static_batch();
  const bool preempted = schedule_running(out, budget);
  // Admitting behind a preemption would hand the freed blocks to a newcomer.
  if (!preempted && config_.policy == SchedulePolicy::kContinuous) admit_waiting(out, budget);
  TALLY_DCHECK(static_cast<int32_t>(out.scheduled.size()) <= config_.max_seqs, "too many rows");
  kv_tokens_stored_ += kv_.n_seq_tokens();
  kv_tokens_reserved_ += kv_.n_used_slots();
  awaiting_update_ = true;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  schedule(out);
  return out;
}

}  // namespace tally
