// Speculation in the scheduler: drafts ride on decode rows, rejected positions are rolled
// back before the prefix cache indexes anything, accepted ones are kept and indexed.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "sched/scheduler.h"

namespace tally {
namespace {

SchedulerConfig spec_sched_config() {
  SchedulerConfig c;
  c.max_batched_tokens = 64;
  c.max_seqs = 4;
  c.max_model_len = 64;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{32, 4, 0.0, true};
  c.spec.mode = SpecMode::kNgram;
  c.spec.ngram_min = 1;
  c.spec.ngram_max = 3;
  c.spec.num_speculative_tokens = 3;
  c.spec.draft_length = DraftLengthRule::kFixed;  // these tests check the machinery
  return c;
}

Scheduler make_spec_scheduler(const SchedulerConfig& c = spec_sched_config()) {
  auto s = Scheduler::create(c);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

RequestSpec spec_request(RequestId id, std::vector<TokenId> prompt) {
  RequestSpec r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = 10;
  return r;
}

void spec_update(Scheduler& s, const SchedulerOutput& out, std::vector<TokenId> tokens,
                 FinishReason finish = FinishReason::kNone) {
  ASSERT_EQ(out.samples.size(), 1u);
  const std::vector<int32_t> counts = {static_cast<int32_t>(tokens.size())};
  const std::vector<FinishReason> finishes = {finish};
  std::vector<SchedulerEvent> events;
  s.update(out, tokens, counts, finishes, events);
  EXPECT_EQ(events.size(), tokens.size());
}

// Prompt "1 2 3 1 2 3 1 2" (2 full blocks of 4) then sampled "3": the next step drafts
// "1 2 3" after "... 1 2 3", filling block 2 with "3 1 2 3". Returns how many prompt tokens
// a later request starting with "1 2 3" x4 finds cached after the verification kept `keep`
// tokens (1 = every draft rejected, 4 = all three accepted plus the bonus).
int32_t cached_after_verification(int32_t keep) {
  Scheduler s = make_spec_scheduler();
  EXPECT_TRUE(s.add_request(spec_request(1, {1, 2, 3, 1, 2, 3, 1, 2})).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {3});
  out = s.schedule();
  EXPECT_EQ(out.scheduled.size(), 1u);
  const ScheduledSeq row = out.scheduled[0];
  EXPECT_EQ(row.start, 8);
  EXPECT_EQ(row.n_draft, 3);
  EXPECT_EQ(row.n_tokens, 4);
  EXPECT_EQ(std::vector<TokenId>(out.draft(row).begin(), out.draft(row).end()),
            (std::vector<TokenId>{1, 2, 3}));
  std::vector<TokenId> emitted = {1, 2, 3, 9};
  emitted.resize(static_cast<size_t>(keep));
  if (keep < 4) emitted.back() = 7;  // the target's token where the draft was rejected
  spec_update(s, out, emitted);
  const Request* r = s.find_request(1);
  EXPECT_NE(r, nullptr);
  if (r == nullptr) return -1;
  // The last emitted token is known but not computed; the accepted drafts are computed.
  EXPECT_EQ(r->samples[0].num_computed, 8 + keep);
  EXPECT_EQ(s.kv().n_seq_tokens(), 8 + keep);
  EXPECT_TRUE(s.kv().check_invariants().ok());

  EXPECT_TRUE(s.add_request(spec_request(2, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 5})).ok());
  out = s.schedule();
  const Request* second = s.find_request(2);
  EXPECT_NE(second, nullptr);
  return second == nullptr ? -1 : second->num_cached_tokens;
}

TEST(SpecSchedule, RejectedDraftsAreNeverIndexedByThePrefixCache) {
  // Block 2 held "3 1 2 3" while verified; with the drafts rejected it must not be found.
  EXPECT_EQ(cached_after_verification(1), 8);
  EXPECT_EQ(cached_after_verification(2), 8);  // one accepted: the block is not full
}

TEST(SpecSchedule, AcceptedDraftsAreKeptAndIndexed) {
  EXPECT_EQ(cached_after_verification(4), 12);
}

TEST(SpecSchedule, RollbackPastABlockBoundarySendsTheTableAsItIsNow) {
  Scheduler s = make_spec_scheduler();
  ASSERT_TRUE(s.add_request(spec_request(1, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2})).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {3});
  out = s.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].start, 11);
  EXPECT_EQ(out.scheduled[0].n_draft, 3);  // positions 11..14: a fourth block
  EXPECT_EQ(s.kv().block_table(s.find_request(1)->samples[0].id).size(), 4u);
  spec_update(s, out, {7});  // every draft rejected: back to 12 tokens, 3 blocks
  const SeqId seq = s.find_request(1)->samples[0].id;
  EXPECT_EQ(s.kv().block_table(seq).size(), 3u);
  out = s.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  const ScheduledSeq& row = out.scheduled[0];
  EXPECT_EQ(row.start, 12);
  // The row's table is the sequence's table now: the released block is gone from it, the
  // block allocated again for position 12 on is its fourth entry.
  const auto table = out.block_table(row);
  ASSERT_EQ(table.size(), 4u);
  EXPECT_TRUE(std::equal(table.begin(), table.end(), s.kv().block_table(seq).begin(),
                         s.kv().block_table(seq).end()));
  EXPECT_TRUE(s.kv().check_invariants().ok());
}

TEST(SpecSchedule, DraftsStayWithinMaxTokensAndTheBudget) {
  SchedulerConfig c = spec_sched_config();
  c.max_batched_tokens = 10;
  auto s_or = Scheduler::create(c);
  ASSERT_TRUE(s_or.ok());
  Scheduler s = std::move(s_or).value();
  RequestSpec a = spec_request(1, {4, 4, 4, 4});
  a.max_tokens = 3;
  ASSERT_TRUE(s.add_request(a).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {4});
  out = s.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  // Two more tokens allowed: one draft token and the token after it.
  EXPECT_EQ(out.scheduled[0].n_draft, 1);
  spec_update(s, out, {4, 4}, FinishReason::kLength);
  EXPECT_EQ(s.find_request(1), nullptr);  // ended at max_tokens with both tokens
  EXPECT_EQ(s.kv().n_seq_tokens(), 0);
}

TEST(SpecSchedule, OffMeansNoDrafts) {
  SchedulerConfig c = spec_sched_config();
  c.spec.mode = SpecMode::kOff;
  auto s_or = Scheduler::create(c);
  ASSERT_TRUE(s_or.ok());
  Scheduler s = std::move(s_or).value();
  ASSERT_TRUE(s.add_request(spec_request(1, {4, 4, 4, 4})).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {4});
  out = s.schedule();
  EXPECT_EQ(out.scheduled[0].n_draft, 0);
  EXPECT_TRUE(out.draft_tokens.empty());
}

// The adaptive rule in the scheduler: with positions that cost in proportion nothing is
// drafted, yet the sequence's acceptance still learns from its guesses; once the engine reports
// that extra positions are nearly free, the same sequence drafts.
TEST(SpecSchedule, AdaptiveDraftsOnlyWhereTheStepCostSaysItPaysAndLearnsWithoutDrafting) {
  SchedulerConfig c = spec_sched_config();
  c.spec.draft_length = DraftLengthRule::kAdaptive;
  Scheduler s = make_spec_scheduler(c);
  for (int32_t n = 1; n <= c.max_batched_tokens; ++n) s.record_step_time(n, 1e-3 * n);
  RequestSpec r = spec_request(1, {4, 4, 4, 4});
  r.max_tokens = 20;
  ASSERT_TRUE(s.add_request(r).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {4});
  for (int i = 0; i < 6; ++i) {
    out = s.schedule();
    ASSERT_EQ(out.scheduled.size(), 1u);
    EXPECT_EQ(out.scheduled[0].n_draft, 0) << "step " << i;
    spec_update(s, out, {4});  // the guess "4" was right
  }
  const float alpha = s.find_request(1)->samples[0].acceptance.alpha;
  EXPECT_GT(alpha, AcceptanceEstimate::kPrior + 0.3f);
  // The curve becomes flat (extra positions free): a change of shape, not of the machine's
  // speed, which the table learns from steps of every size, one after the other.
  for (int rep = 0; rep < 200; ++rep) {
    for (int32_t n = 1; n <= c.max_batched_tokens; ++n) s.record_step_time(n, 1e-3);
  }
  out = s.schedule();
  EXPECT_EQ(out.scheduled[0].n_draft, 3);
  spec_update(s, out, {4, 5});  // one accepted, then a miss
  EXPECT_LT(s.find_request(1)->samples[0].acceptance.alpha, alpha);
}

// A new sequence starts from the pooled acceptance of earlier sequences' guesses, not from an
// even guess: after a request whose guesses all missed, a new request with a repeating prompt
// does not draft its first guesses (each such draft is a loss on text the model does not
// copy), while the same request on a fresh scheduler does.
TEST(SpecSchedule, ANewSequenceStartsFromThePooledAcceptance) {
  SchedulerConfig c = spec_sched_config();
  c.spec.draft_length = DraftLengthRule::kAdaptive;
  c.max_model_len = 64;
  // A draft position costs a fifth of a step: one draft token pays from acceptance ~0.32.
  const auto priced = [&](Scheduler& s) {
    for (int32_t n = 1; n <= c.max_batched_tokens; ++n) {
      s.record_step_time(n, 1e-3 * (1 + 0.2 * (n - 1)));
    }
  };
  const auto first_decode_drafts = [&](Scheduler& s, RequestId id) {
    RequestSpec r = spec_request(id, {5, 6, 5, 6, 5, 6, 5});
    r.max_tokens = 4;
    EXPECT_TRUE(s.add_request(r).ok());
    SchedulerOutput out = s.schedule();
    spec_update(s, out, {6});
    out = s.schedule();
    EXPECT_EQ(out.scheduled.size(), 1u);
    return out.scheduled.empty() ? -1 : out.scheduled[0].n_draft;
  };
  Scheduler fresh = make_spec_scheduler(c);
  priced(fresh);
  EXPECT_GT(first_decode_drafts(fresh, 2), 0);

  Scheduler s = make_spec_scheduler(c);
  priced(s);
  RequestSpec r = spec_request(1, {1, 2, 3, 1, 2, 3, 1, 2});
  r.max_tokens = 48;
  ASSERT_TRUE(s.add_request(r).ok());
  // Outputs alternate 1 and a new token: every guess (what followed the last 1) misses.
  TokenId fresh_token = 100;
  for (int32_t i = 0; i < r.max_tokens; ++i) {
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.scheduled.size(), 1u);
    const TokenId t = i % 2 == 1 ? 1 : fresh_token++;
    spec_update(s, out, {t}, i + 1 == r.max_tokens ? FinishReason::kLength : FinishReason::kNone);
  }
  EXPECT_LT(s.pooled_ngram_acceptance(), 0.25f);
  EXPECT_EQ(first_decode_drafts(s, 2), 0);
}

// `auto` with a draft model picks the source per sequence and step: the n-gram drafter where
// it has a match, else the draft model, whose drafts the adaptive rule prices with the
// measured cost of its passes: none while a pass costs as much as a target step, in full once
// passes are cheap. Its acceptance is learned from the drafts the model made.
TEST(SpecSchedule, AutoPicksTheSourcePerSequenceAndPricesTheDraftModelsPasses) {
  SchedulerConfig c = spec_sched_config();
  c.spec.mode = SpecMode::kAuto;
  c.spec.draft_model_path = "draft.gguf";  // the engine loads it; the scheduler only plans
  c.spec.draft_length = DraftLengthRule::kAdaptive;
  Scheduler s = make_spec_scheduler(c);
  for (int32_t n = 1; n <= c.max_batched_tokens; ++n) s.record_step_time(n, 1e-3);
  for (int32_t r = 1; r <= c.max_seqs; ++r) s.record_draft_pass_time(r, 1e-3);
  RequestSpec r = spec_request(1, {1, 2, 3, 5});  // no repeat: no n-gram match
  r.max_tokens = 20;
  ASSERT_TRUE(s.add_request(r).ok());
  SchedulerOutput out = s.schedule();
  spec_update(s, out, {6});
  TokenId next = 7;
  for (int i = 0; i < 3; ++i) {
    out = s.schedule();
    ASSERT_EQ(out.scheduled.size(), 1u);
    EXPECT_EQ(out.scheduled[0].n_draft, 0) << "step " << i;
    spec_update(s, out, {next++});
  }
  EXPECT_EQ(s.find_request(1)->samples[0].model_acceptance.alpha, AcceptanceEstimate::kPrior);
  for (int rep = 0; rep < 20; ++rep) {
    for (int32_t rows = 1; rows <= c.max_seqs; ++rows) s.record_draft_pass_time(rows, 1e-6);
  }
  out = s.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].n_draft, 3);
  EXPECT_TRUE(out.scheduled[0].draft_by_model);
  // The engine writes the model's proposals; one accepted, then a miss.
  out.draft_tokens[static_cast<size_t>(out.scheduled[0].draft_begin)] = next;
  spec_update(s, out, {next, 99});
  const Sequence& seq = s.find_request(1)->samples[0];
  EXPECT_NE(seq.model_acceptance.alpha, AcceptanceEstimate::kPrior);
  EXPECT_EQ(seq.acceptance.alpha, AcceptanceEstimate::kPrior);  // no n-gram guess was compared

  // A sequence whose text repeats drafts with the n-gram drafter, known at scheduling.
  Scheduler s2 = make_spec_scheduler(c);
  for (int32_t n = 1; n <= c.max_batched_tokens; ++n) s2.record_step_time(n, 1e-3);
  for (int32_t rows = 1; rows <= c.max_seqs; ++rows) s2.record_draft_pass_time(rows, 1e-3);
  ASSERT_TRUE(s2.add_request(spec_request(2, {4, 4, 4, 4})).ok());
  out = s2.schedule();
  spec_update(s2, out, {4});
  out = s2.schedule();
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].n_draft, 3);
  EXPECT_FALSE(out.scheduled[0].draft_by_model);
  EXPECT_EQ(out.draft_tokens, (std::vector<TokenId>{4, 4, 4}));
}

}  // namespace
}  // namespace tally
