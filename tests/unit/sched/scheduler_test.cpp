#include "sched/scheduler.h"

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "toy_runner.h"

namespace tally {
namespace {

using tally_test::toy_reference;
using tally_test::ToyDriver;
using tally_test::ToyRequest;

constexpr int32_t kVocab = 64;

SchedulerConfig small_config() {
  SchedulerConfig c;
  c.max_batched_tokens = 32;
  c.max_seqs = 4;
  c.max_model_len = 128;
  c.max_waiting = 8;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{64, 4, 0.0};
  return c;
}

Scheduler make(const SchedulerConfig& c) {
  auto s = Scheduler::create(c);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

ToyRequest spec(RequestId id, int32_t prompt_len, int32_t max_tokens, int32_t priority = 0,
                 int32_t n = 1) {
  ToyRequest r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((id * 7 + i) % kVocab);
  r.max_tokens = max_tokens;
  r.priority = priority;
  r.n = n;
  return r;
}

TEST(Scheduler, CreateRejectsBadConfig) {
  SchedulerConfig c = small_config();
  c.max_seqs = 0;
  EXPECT_EQ(Scheduler::create(c).status().code(), ErrorCode::kInvalidArgument);
  c = small_config();
  c.kv.block_size = 0;
  EXPECT_FALSE(Scheduler::create(c).ok());
  c = small_config();
  c.aging_steps = -1;
  EXPECT_FALSE(Scheduler::create(c).ok());
}

TEST(Scheduler, RejectsRequestsThatCanNeverRun) {
  Scheduler s = make(small_config());
  const Status too_long = s.add_request(spec(1, 128, 4));
  EXPECT_EQ(too_long.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(too_long.message().find("128 tokens"), std::string::npos) << too_long.message();
  EXPECT_NE(too_long.message().find("holds 128"), std::string::npos) << too_long.message();
  EXPECT_EQ(s.add_request(spec(2, 0, 4)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.add_request(spec(3, 4, 0)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.add_request(spec(4, 4, 4, 0, 5)).code(), ErrorCode::kInvalidArgument);  // n > 4
  ASSERT_TRUE(s.add_request(spec(5, 4, 4)).ok());
  EXPECT_EQ(s.add_request(spec(5, 4, 4)).code(), ErrorCode::kInvalidArgument);  // duplicate
  // More KV than the whole pool (64 blocks of 4 = 256 tokens > 127 + ... with n = 4).
  SchedulerConfig c = small_config();
  c.kv.n_blocks = 16;
  Scheduler tiny = make(c);
  // 16 blocks of 4: 40 + 25 outputs store 64 tokens (the last output is never computed).
  const Status big = tiny.add_request(spec(6, 40, 26));
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(big.message().find("needs up to 17 KV blocks"), std::string::npos) << big.message();
  EXPECT_TRUE(tiny.add_request(spec(7, 40, 25)).ok());
  EXPECT_EQ(s.stats().n_waiting, 1);
}

TEST(Scheduler, FullQueuePushesBack) {
  Scheduler s = make(small_config());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(s.add_request(spec(i, 4, 4)).ok());
  const Status full = s.add_request(spec(99, 4, 4));
  EXPECT_EQ(full.code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(full.message().find("try later"), std::string::npos);
  // Once some are admitted, there is room again.
  SchedulerOutput out = s.schedule();
  std::vector<TokenId> tokens(out.samples.size(), 1);
  (void)s.update(out, tokens, tally_test::going(tokens.size()));
  EXPECT_TRUE(s.add_request(spec(99, 4, 4)).ok());
}

TEST(Scheduler, OneRequestRunsToItsReferenceOutput) {
  Scheduler s = make(small_config());
  ToyDriver d(s, kVocab);
  ToyRequest r = spec(1, 10, 12);
  ASSERT_TRUE(d.add(r).ok());
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.outputs[1], toy_reference(r, 128, kVocab));
  EXPECT_EQ(d.finish[1][0], FinishReason::kLength);
  EXPECT_EQ(d.steps, 12);  // one prefill step (10 <= 32), then 11 decodes
  EXPECT_EQ(s.kv().n_used_blocks(), 0);
  EXPECT_EQ(s.find_request(1), nullptr);
}

TEST(Scheduler, StopTokenAndFullContextEndSamples) {
  SchedulerConfig c = small_config();
  c.max_model_len = 20;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ToyRequest a = spec(1, 6, 100);
  const auto ref = toy_reference(a, 20, kVocab);
  a.stop_token_ids = {ref[0][3]};  // its 4th token
  ToyRequest b = spec(2, 15, 100);
  ASSERT_TRUE(d.add(a).ok());
  ASSERT_TRUE(d.add(b).ok());
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.finish[1][0], FinishReason::kStop);
  EXPECT_EQ(d.outputs[1][0].size(), 4u);  // the stop token is kept as the last one
  EXPECT_EQ(d.outputs[1], toy_reference(a, 20, kVocab));
  EXPECT_EQ(d.finish[2][0], FinishReason::kLength);
  EXPECT_EQ(d.outputs[2][0].size(), 5u);  // 15 + 5 = the context
}

TEST(Scheduler, BudgetAndSequenceCapHoldUnderLoad) {
  Scheduler s = make(small_config());
  ToyDriver d(s, kVocab);
  std::vector<ToyRequest> specs;
  for (int i = 0; i < 8; ++i) specs.push_back(spec(i, 3 + 11 * i % 50, 5 + i));
  for (const auto& r : specs) ASSERT_TRUE(d.add(r).ok());
  int max_rows = 0, full_steps = 0;
  while (s.has_unfinished() && d.steps < 500) {
    d.step();
    ASSERT_FALSE(HasFatalFailure());
    max_rows = std::max<int>(max_rows, d.out.scheduled.size());
    full_steps += d.out.n_tokens == 32 ? 1 : 0;
  }
  ASSERT_FALSE(s.has_unfinished());
  EXPECT_EQ(max_rows, 4);  // the cap was reached, never passed (checked every step)
  EXPECT_GT(full_steps, 0);  // and so was the budget
  for (const auto& r : specs) EXPECT_EQ(d.outputs[r.id], toy_reference(r, 128, kVocab));
}

TEST(Scheduler, ChunkedPrefillKeepsOtherDecodesFlowing) {
  SchedulerConfig c = small_config();
  c.max_batched_tokens = 16;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ToyRequest a = spec(1, 4, 30);
  ToyRequest b = spec(2, 100, 3);
  ASSERT_TRUE(d.add(a).ok());
  d.step();  // a: prefill
  d.step();  // a: decoding
  ASSERT_TRUE(d.add(b).ok());
  int b_chunks = 0;
  while (s.find_request(2) && s.find_request(2)->samples[0].output.empty()) {
    d.step();
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(d.out.scheduled.size(), 2u) << "step " << d.out.step;
    const ScheduledSeq& first = d.out.scheduled[0];
    const ScheduledSeq& second = d.out.scheduled[1];
    EXPECT_EQ(first.request_id, 1);
    EXPECT_EQ(first.n_tokens, 1);  // a decodes in every step of b's prefill
    EXPECT_EQ(second.request_id, 2);
    EXPECT_LE(second.n_tokens, 15);
    EXPECT_EQ(second.start, 15 * b_chunks);
    ++b_chunks;
  }
  EXPECT_EQ(b_chunks, 7);  // ceil(100 / 15)
  ASSERT_TRUE(d.run(200));
  EXPECT_EQ(d.outputs[1], toy_reference(a, 128, kVocab));
  EXPECT_EQ(d.outputs[2], toy_reference(b, 128, kVocab));
}

TEST(Scheduler, DecodesKeepFlowingBesideAMoreImportantPrefill) {
  SchedulerConfig c = small_config();
  c.max_batched_tokens = 16;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 4, 30)).ok());
  ASSERT_TRUE(d.add(spec(2, 4, 30)).ok());
  d.step();
  ASSERT_TRUE(d.add(spec(3, 100, 3, /*priority=*/-1)).ok());
  d.step();  // admitted after the running ones, with what their decodes left
  ASSERT_EQ(d.out.scheduled.size(), 3u);
  EXPECT_EQ(d.out.scheduled[2].request_id, 3);
  EXPECT_EQ(d.out.scheduled[2].n_tokens, 14);
  for (int step = 0; step < 5; ++step) {
    d.step();
    ASSERT_EQ(d.out.scheduled.size(), 3u);
    EXPECT_EQ(d.out.scheduled[0].request_id, 3);  // first, but leaves one token per decode
    EXPECT_EQ(d.out.scheduled[0].n_tokens, 14);
    EXPECT_EQ(d.out.scheduled[1].n_tokens, 1);
    EXPECT_EQ(d.out.scheduled[2].n_tokens, 1);
  }
}

TEST(Scheduler, WatermarkHoldsBackAdmissionsButNotALoneRequest) {
  SchedulerConfig c = small_config();
  c.kv = KvCacheConfig{10, 4, 0.2};  // 2 blocks held back from admissions
  c.max_batched_tokens = 64;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 8, 3)).ok());   // 2 blocks, then 3
  ASSERT_TRUE(d.add(spec(2, 28, 3)).ok());  // 7 blocks: fit in 8 free, not in 8 - 2
  d.step();
  ASSERT_EQ(d.out.scheduled.size(), 1u);
  d.step();
  EXPECT_EQ(d.out.scheduled.size(), 1u);
  EXPECT_EQ(s.find_request(2)->status, RequestStatus::kWaiting);
  ASSERT_TRUE(d.run(20));
  EXPECT_EQ(d.finished_order, (std::vector<RequestId>{1, 2}));

  // Alone, a request may use the watermark's blocks: 9 of 10.
  Scheduler alone = make(c);
  ToyDriver d2(alone, kVocab);
  ASSERT_TRUE(d2.add(spec(3, 34, 3)).ok());
  d2.step();
  ASSERT_EQ(d2.out.scheduled.size(), 1u);
  EXPECT_EQ(d2.out.scheduled[0].n_tokens, 34);
  EXPECT_EQ(alone.kv().n_used_blocks(), 9);
  ASSERT_TRUE(d2.run(20));
}

TEST(Scheduler, AMidPromptChunkSamplesNothing) {
  SchedulerConfig c = small_config();
  c.max_batched_tokens = 8;
  Scheduler s = make(c);
  ASSERT_TRUE(s.add_request(spec(1, 20, 2)).ok());
  for (int step = 0; step < 2; ++step) {
    SchedulerOutput out = s.schedule();
    ASSERT_EQ(out.scheduled.size(), 1u);
    EXPECT_EQ(out.scheduled[0].n_tokens, 8);
    EXPECT_TRUE(out.samples.empty());
    EXPECT_TRUE(s.update(out, {}, {}).empty());
  }
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(out.scheduled[0].n_tokens, 4);
  ASSERT_EQ(out.samples.size(), 1u);
  const TokenId t = 5;
  auto events = s.update(out, std::span<const TokenId>(&t, 1), tally_test::going(1));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].token, 5);
  EXPECT_EQ(s.find_request(1)->samples[0].num_computed, 20);
}

TEST(Scheduler, AbortFreesBlocksAtTheNextSchedule) {
  Scheduler s = make(small_config());
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 20, 50)).ok());
  ASSERT_TRUE(d.add(spec(2, 8, 50)).ok());
  d.step();
  d.step();
  const SeqId seq1 = s.find_request(1)->samples[0].id;
  const int32_t used = s.kv().n_used_blocks();
  ASSERT_TRUE(s.abort_request(1).ok());
  EXPECT_TRUE(s.abort_request(1).ok());  // twice is fine
  EXPECT_EQ(s.kv().n_used_blocks(), used);  // nothing freed yet
  d.step();
  EXPECT_EQ(d.out.finished_request_ids, std::vector<RequestId>{1});
  EXPECT_NE(std::find(d.out.freed_seq_ids.begin(), d.out.freed_seq_ids.end(), seq1),
            d.out.freed_seq_ids.end());
  for (const auto& row : d.out.scheduled) EXPECT_NE(row.request_id, 1);
  EXPECT_FALSE(s.kv().contains(seq1));
  EXPECT_EQ(d.finish[1][0], FinishReason::kAbort);
  EXPECT_EQ(d.finished_order, std::vector<RequestId>{1});
  EXPECT_EQ(s.abort_request(1).code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.abort_request(42).code(), ErrorCode::kNotFound);
}

TEST(Scheduler, AbortBetweenScheduleAndUpdateDropsTheResults) {
  Scheduler s = make(small_config());
  ASSERT_TRUE(s.add_request(spec(1, 4, 5)).ok());
  ASSERT_TRUE(s.add_request(spec(2, 4, 5)).ok());
  SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.samples.size(), 2u);
  ASSERT_TRUE(s.abort_request(2).ok());
  const std::vector<TokenId> tokens = {3, 4};
  auto events = s.update(out, tokens, tally_test::going(tokens.size()));
  ASSERT_EQ(events.size(), 1u);  // only request 1's token
  EXPECT_EQ(events[0].request_id, 1);
  EXPECT_TRUE(s.find_request(2)->samples[0].output.empty());
  out = s.schedule();
  EXPECT_EQ(out.finished_request_ids, std::vector<RequestId>{2});
  events = s.update(out, std::vector<TokenId>(out.samples.size(), 3),
                    tally_test::going(out.samples.size()));
  ASSERT_EQ(events.size(), 2u);  // the abort's end, then request 1's token
  EXPECT_EQ(events[0].request_id, 2);
  EXPECT_EQ(events[0].finish, FinishReason::kAbort);
  EXPECT_TRUE(events[0].request_done);
}

TEST(Scheduler, AbortOfAWaitingRequest) {
  SchedulerConfig c = small_config();
  c.max_seqs = 1;
  Scheduler s = make(c);
  ASSERT_TRUE(s.add_request(spec(1, 4, 5)).ok());
  ASSERT_TRUE(s.add_request(spec(2, 4, 5)).ok());
  SchedulerOutput out = s.schedule();
  (void)s.update(out, std::vector<TokenId>(out.samples.size(), 3),
                 tally_test::going(out.samples.size()));
  EXPECT_EQ(s.stats().n_waiting, 1);
  ASSERT_TRUE(s.abort_request(2).ok());
  out = s.schedule();
  EXPECT_EQ(s.stats().n_waiting, 0);
  EXPECT_EQ(out.finished_request_ids, std::vector<RequestId>{2});
  EXPECT_TRUE(out.freed_seq_ids.empty());  // it never held blocks
  (void)s.update(out, std::vector<TokenId>(out.samples.size(), 3),
                 tally_test::going(out.samples.size()));
}

TEST(Scheduler, HigherPriorityIsAdmittedFirst) {
  SchedulerConfig c = small_config();
  c.max_seqs = 1;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 4, 2, /*priority=*/5)).ok());
  ASSERT_TRUE(d.add(spec(2, 4, 2, /*priority=*/0)).ok());
  ASSERT_TRUE(d.add(spec(3, 4, 2, /*priority=*/5)).ok());
  ASSERT_TRUE(d.add(spec(4, 4, 2, /*priority=*/-1)).ok());
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.finished_order, (std::vector<RequestId>{4, 2, 1, 3}));
}

// One slot, a low-priority request first, then a steady stream of high-priority ones.
int64_t steps_until_low_priority_runs(int32_t aging_steps) {
  SchedulerConfig c = small_config();
  c.max_seqs = 1;
  c.max_waiting = 1000;
  c.aging_steps = aging_steps;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  EXPECT_TRUE(d.add(spec(0, 4, 1, /*priority=*/3)).ok());
  RequestId next = 1;
  for (int step = 0; step < 200; ++step) {
    EXPECT_TRUE(d.add(spec(next++, 4, 1, /*priority=*/0)).ok());
    d.step();
    if (!s.find_request(0)) return step;
  }
  return -1;
}

TEST(Scheduler, AgingLetsALowPriorityRequestRun) {
  EXPECT_EQ(steps_until_low_priority_runs(0), -1);  // starves without aging
  // With 10 steps per level, 3 levels are made up after ~30 steps.
  const int64_t ran_at = steps_until_low_priority_runs(10);
  EXPECT_GE(ran_at, 25);
  EXPECT_LE(ran_at, 35);
}

TEST(Scheduler, StatsCountRunningWaitingAndUsage) {
  SchedulerConfig c = small_config();
  c.max_seqs = 2;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(d.add(spec(i, 8, 4)).ok());
  EXPECT_EQ(s.stats().n_waiting, 3);
  d.step();
  const SchedulerStats st = s.stats();
  EXPECT_EQ(st.n_running, 2);
  EXPECT_EQ(st.n_running_seqs, 2);
  EXPECT_EQ(st.n_waiting, 1);
  EXPECT_EQ(st.steps, 1);
  EXPECT_EQ(st.kv_used_blocks, 4);  // 8 prompt tokens each (the sampled one is not stored yet)
  EXPECT_DOUBLE_EQ(st.kv_usage, 4.0 / 64);
  EXPECT_EQ(st.kv_tokens_stored, 16);  // sampled at schedule time: 8 + 8
  EXPECT_EQ(st.kv_tokens_reserved, 16);
  EXPECT_DOUBLE_EQ(st.kv_utilization(), 1.0);
}

}  // namespace
}  // namespace tally
