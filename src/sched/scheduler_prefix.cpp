// The prefix cache's part of scheduling: which waiting request goes next (longest cached
// prefix, bounded overtaking), and indexing the blocks a step computed.
#include <algorithm>

#include "base/check.h"
#include "sched/scheduler.h"

namespace tally {

namespace {

// How many waiting requests (from the head) are compared for their cached prefix: enough to
// find the requests of a shared-prefix group, few enough that matching costs nothing.
constexpr int32_t kPrefixPickWindow = 32;

}  // namespace

std::span<const TokenId> Scheduler::seq_tokens(const Request& r, const Sequence& s,
                                               int32_t n_tokens) {
  if (n_tokens <= r.prompt_len()) {
    return std::span<const TokenId>(r.spec.prompt).first(static_cast<size_t>(n_tokens));
  }
  token_scratch_.assign(r.spec.prompt.begin(), r.spec.prompt.end());
  token_scratch_.insert(token_scratch_.end(), s.output.begin(),
                        s.output.begin() + (n_tokens - r.prompt_len()));
  return token_scratch_;
}

std::span<const TokenId> Scheduler::stage_tokens(Request& r) {
  // What admission computes: the prompt for a carrier (n > 1), else sample 0's known tokens
  // (its outputs too after a preemption).
  if (r.spec.n > 1) return r.spec.prompt;
  return seq_tokens(r, r.samples[0], r.known_tokens(r.samples[0]));
}

Scheduler::WaitingCandidate Scheduler::candidate(Request& r) {
  const std::span<const TokenId> tokens = stage_tokens(r);
  const int32_t todo = static_cast<int32_t>(tokens.size());
  kv_.match_prefix(tokens, r.spec.cache_salt, (todo - 1) / kv_.block_size(), match_);
  WaitingCandidate c;
  c.cached_tokens = match_.n_blocks() * kv_.block_size();
  c.next_in_flight = match_.has_next && std::find(in_flight_.begin(), in_flight_.end(),
                                                  match_.next_key) != in_flight_.end();
  return c;
}

Request* Scheduler::pick_waiting() {
  Request* head = *waiting_.begin();
  if (!kv_.prefix_caching() || head->status == RequestStatus::kPreempted) return head;
  Request* best = nullptr;
  int32_t best_cached = -1;
  int32_t scanned = 0;
  for (auto it = waiting_.begin(); it != waiting_.end() && scanned < kPrefixPickWindow;
       ++it, ++scanned) {
    Request& r = **it;
    if (r.spec.priority != head->spec.priority || r.status == RequestStatus::kPreempted) break;
    const WaitingCandidate c = candidate(r);
    if (!c.next_in_flight && c.cached_tokens > best_cached) {
      best = &r;
      best_cached = c.cached_tokens;
    }
    if (r.overtake_allowance <= 0) break;  // nobody behind it may pass it any more
  }
  return best;
}

void Scheduler::note_running_prefills() {
  // A request still computing its prompt computes its next unindexed block soon: a waiting
  // request that would compute the same block waits and then hits instead.
  if (!kv_.prefix_caching()) return;
  for (Request* r : running_) {
    Sequence& s = r->in_carrier_stage() ? r->carrier : r->samples[0];
    if (s.num_computed >= r->prompt_len() || !kv_.contains(s.id)) continue;
    PrefixKey key;
    if (kv_.next_uncached_key(s.id, r->spec.prompt, r->spec.cache_salt, key)) {
      in_flight_.push_back(key);
    }
  }
}

void Scheduler::note_overtakes(const Request& admitted) {
  if (!kv_.prefix_caching()) return;
  for (Request* r : waiting_) {
    if (r == &admitted) break;
    --r->overtake_allowance;
  }
}

void Scheduler::cache_computed_blocks(Request& r, Sequence& s, int32_t start, int32_t n_tokens) {
  // Only when this step filled a block: a decode indexes once every block_size steps.
  const int32_t end = start + n_tokens;
  if (!kv_.prefix_caching() || end / kv_.block_size() == start / kv_.block_size()) return;
  if (!kv_.contains(s.id)) return;
  kv_.cache_full_blocks(s.id, seq_tokens(r, s, end), r.spec.cache_salt);
}

}  // namespace tally
