// Admission with a sliding window whose blocks are freed: a request is judged by the blocks its
// window needs (Scheduler::worst_case_blocks, as `tally plan` counts), so one far longer than
// the pool is admitted and runs to the end alone, and one whose window does not fit is refused.
#include <gtest/gtest.h>

#include <cstdio>

#include "sched/scheduler.h"
#include "toy_runner.h"

namespace tally {
namespace {

using tally_test::toy_reference;
using tally_test::ToyDriver;
using tally_test::ToyRequest;

constexpr int32_t kVocab = 64;

// 4-token blocks, a window of 6, 8-token steps: a sequence holds at most
// ceil((6 - 1 + 8) / 4) + 1 = 5 blocks.
SchedulerConfig window_config(int32_t n_blocks, int32_t window) {
  SchedulerConfig c;
  c.max_batched_tokens = 8;
  c.max_seqs = 4;
  c.max_model_len = 128;
  c.max_waiting = 8;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{n_blocks, 4, 0.0};
  c.kv.sliding_window = window;
  return c;
}

ToyRequest request(RequestId id, int32_t prompt_len, int32_t max_tokens, int32_t n = 1) {
  ToyRequest r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((id * 5 + i) % kVocab);
  r.max_tokens = max_tokens;
  r.n = n;
  return r;
}

// The blocks check_request says a request needs running alone (0 when it fits in `n_blocks`).
int32_t needed_beyond(int32_t n_blocks, int32_t window, const ToyRequest& r) {
  const Status st = Scheduler::check_request(window_config(n_blocks, window), r);
  if (st.ok()) return 0;
  int32_t blocks = -1;
  std::sscanf(st.message().c_str(), "needs up to %d KV blocks", &blocks);
  return blocks;
}

TEST(WindowAdmission, CountsTheWindowNotTheLength) {
  // 20 + 40 tokens store 59 positions: 15 blocks, but 5 with the window.
  const ToyRequest r = request(1, 20, 40);
  EXPECT_EQ(needed_beyond(8, 0, r), 15);
  EXPECT_EQ(needed_beyond(4, 6, r), 5);
  EXPECT_EQ(needed_beyond(5, 6, r), 0);
  // n samples hold a window each.
  EXPECT_EQ(needed_beyond(8, 6, request(2, 20, 40, 3)), 15);
  // A short request needs no more than its length, window or not.
  EXPECT_EQ(needed_beyond(1, 6, request(3, 3, 2)), 0);
}

TEST(WindowAdmission, AdmittedOnlyThanksToTheWindowAndRunsAlone) {
  auto s = Scheduler::create(window_config(8, 6));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ToyDriver d(*s, kVocab);
  const ToyRequest r = request(1, 20, 40);
  ASSERT_TRUE(d.add(r).ok());
  while (s->has_unfinished() && d.steps < 200) {
    d.step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    EXPECT_TRUE(d.out.preempted_request_ids.empty()) << "step " << d.steps;
    EXPECT_LE(s->kv().n_used_blocks(), 5) << "step " << d.steps;
  }
  EXPECT_FALSE(s->has_unfinished());
  EXPECT_EQ(d.outputs[1], toy_reference(r, 128, kVocab));
  EXPECT_EQ(d.finish[1][0], FinishReason::kLength);
  EXPECT_EQ(s->kv().n_used_blocks(), 0);

  // Without the window the same request is refused.
  auto plain = Scheduler::create(window_config(8, 0));
  ASSERT_TRUE(plain.ok());
  const Status st = plain->add_request(r);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("needs up to 15 KV blocks"), std::string::npos) << st.to_string();
}

TEST(WindowAdmission, AWindowLargerThanThePoolIsStillRefused) {
  auto s = Scheduler::create(window_config(4, 6));
  ASSERT_TRUE(s.ok());
  const Status st = s->add_request(request(1, 20, 40));
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("needs up to 5 KV blocks running alone, the pool has 4"), std::string::npos)
      << st.to_string();
  EXPECT_TRUE(s->add_request(request(2, 3, 2)).ok());  // a short one still fits
}

}  // namespace
}  // namespace tally
