// A sample that the caller ends before its limits (the engine's stop strings) through the
// finish reasons given to Scheduler::update, and Scheduler::check_request (add_request's
// checks without the queue).
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "toy_runner.h"

namespace tally {
namespace {

using tally_test::ToyDriver;
using tally_test::ToyRequest;

constexpr int32_t kVocab = 64;

SchedulerConfig config() {
  SchedulerConfig c;
  c.max_batched_tokens = 32;
  c.max_seqs = 4;
  c.max_model_len = 128;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{64, 4, 0.0};
  return c;
}

ToyRequest spec(RequestId id, int32_t prompt_len, int32_t max_tokens, int32_t n = 1) {
  ToyRequest r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((id * 5 + i) % kVocab);
  r.max_tokens = max_tokens;
  r.n = n;
  return r;
}

TEST(SchedulerFinishSample, EndsOneSampleFreesItsBlocksAndRetiresTheLast) {
  auto made = Scheduler::create(config());
  ASSERT_TRUE(made.ok());
  Scheduler s = std::move(made).value();
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 10, 20, /*n=*/2)).ok());
  ASSERT_TRUE(d.add(spec(2, 6, 20)).ok());
  while (d.outputs[1][0].size() < 3) d.step();
  const Request* r = s.find_request(1);
  ASSERT_NE(r, nullptr);
  const SeqId first = r->samples[0].id;
  ASSERT_TRUE(s.kv().contains(first));
  // The blocks sample 0 holds alone (its copy of the last prompt block, its outputs').
  const auto own_table = s.kv().block_table(first);
  const auto other_table = s.kv().block_table(r->samples[1].id);
  std::vector<BlockId> own;
  for (BlockId b : own_table) {
    if (std::find(other_table.begin(), other_table.end(), b) == other_table.end()) own.push_back(b);
  }
  ASSERT_FALSE(own.empty());

  d.stop_next.push_back({1, 0});
  d.step();  // sample 0 takes its 4th token and ends with it
  EXPECT_EQ(d.finish[1][0], FinishReason::kStop);
  EXPECT_EQ(d.outputs[1][0].size(), 4u);
  EXPECT_FALSE(s.kv().contains(first));
  // Its own blocks went back: no live sequence holds them.
  for (const RequestId id : {RequestId{1}, RequestId{2}}) {
    for (const Sequence& seq : s.find_request(id)->samples) {
      if (!s.kv().contains(seq.id)) continue;
      for (BlockId b : s.kv().block_table(seq.id)) {
        EXPECT_EQ(std::count(own.begin(), own.end(), b), 0) << "block " << b;
      }
    }
  }
  EXPECT_EQ(s.stats().n_running_seqs, 2);  // sample 1 and request 2
  ASSERT_TRUE(s.kv().check_invariants().ok());

  d.step();
  EXPECT_EQ(d.outputs[1][0].size(), 4u);  // sample 0 gets no more tokens
  d.stop_next.push_back({1, 1});
  d.step();
  EXPECT_EQ(d.finish[1][1], FinishReason::kStop);
  EXPECT_EQ(s.find_request(1), nullptr);  // the last sample retired the request
  d.step();
  EXPECT_NE(std::find(d.out.finished_request_ids.begin(), d.out.finished_request_ids.end(), 1),
            d.out.finished_request_ids.end());
  ASSERT_TRUE(d.run(1000));
  EXPECT_EQ(s.kv().n_free_blocks(), s.kv().n_blocks());
}

TEST(SchedulerFinishSample, CheckRequestMatchesAddRequest) {
  const SchedulerConfig c = config();
  EXPECT_TRUE(Scheduler::check_request(c, spec(1, 10, 8)).ok());
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 0, 8)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 128, 8)).code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 10, 0)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 10, 8, 5)).code(), ErrorCode::kInvalidArgument);
  // More KV than the pool holds: 64 blocks of 4 tokens; 4 samples of 119 tokens.
  const Status big = Scheduler::check_request(c, spec(1, 20, 100, 4));
  EXPECT_EQ(big.code(), ErrorCode::kInvalidArgument);
  auto made = Scheduler::create(c);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->add_request(spec(1, 20, 100, 4)).code(), big.code());
}

TEST(SchedulerFinishSample, CheckRequestNamesTheFieldAsAValue) {
  // The field at fault is part of the error (Status::field), not something to find in the
  // message; add_request's "request ID: " context keeps it.
  const SchedulerConfig c = config();
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 10, 8)).field(), "");
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 0, 8)).field(), "prompt");
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 128, 8)).field(), "prompt");
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 10, 0)).field(), "max_tokens");
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 10, 8, 5)).field(), "n");
  EXPECT_EQ(Scheduler::check_request(c, spec(1, 20, 100, 4)).field(), "n");
  auto made = Scheduler::create(c);
  ASSERT_TRUE(made.ok());
  const Status added = made->add_request(spec(7, 128, 8));
  EXPECT_EQ(added.field(), "prompt");
  EXPECT_NE(added.message().find("request 7"), std::string::npos) << added.message();
}

}  // namespace
}  // namespace tally
