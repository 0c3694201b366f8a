// Preemption, n > 1 sharing and randomized workloads on tiny pools: every request must end
// with exactly the tokens it would produce running alone.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "toy_runner.h"

namespace tally {
namespace {

using tally_test::toy_reference;
using tally_test::ToyDriver;
using tally_test::ToyRequest;

constexpr int32_t kVocab = 48;

Scheduler make(const SchedulerConfig& c) {
  auto s = Scheduler::create(c);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

ToyRequest spec(RequestId id, int32_t prompt_len, int32_t max_tokens, int32_t n = 1) {
  ToyRequest r;
  r.id = id;
  for (int32_t i = 0; i < prompt_len; ++i) r.prompt.push_back((id * 5 + i * 3) % kVocab);
  r.max_tokens = max_tokens;
  r.n = n;
  return r;
}

SchedulerConfig tiny_config() {
  SchedulerConfig c;
  c.max_batched_tokens = 24;
  c.max_seqs = 6;
  c.max_model_len = 64;
  c.max_waiting = 1000;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{20, 4, 0.05};
  return c;
}

TEST(Preemption, NewestRequestIsPreemptedAndRecomputedExactly) {
  SchedulerConfig c = tiny_config();
  c.kv.n_blocks = 8;  // 32 slots
  c.kv.watermark = 0.0;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ToyRequest a = spec(1, 8, 20);  // grows to 27 stored tokens: 7 blocks
  ToyRequest b = spec(2, 8, 12);
  ASSERT_TRUE(d.add(a).ok());
  ASSERT_TRUE(d.add(b).ok());
  bool saw_preemption = false;
  while (s.has_unfinished() && d.steps < 200) {
    const size_t b_outputs = d.outputs[2][0].size();
    d.step();
    ASSERT_FALSE(HasFatalFailure());
    if (!d.out.preempted_request_ids.empty()) {
      saw_preemption = true;
      EXPECT_EQ(d.out.preempted_request_ids, std::vector<RequestId>{2});  // the newer one
      EXPECT_EQ(s.find_request(2)->status, RequestStatus::kPreempted);
      EXPECT_FALSE(s.kv().contains(s.find_request(2)->samples[0].id));
      for (const auto& row : d.out.scheduled) EXPECT_NE(row.request_id, 2);
    }
    // Coming back, b keeps every token it had and recomputes from 0: its row starts at
    // position 0 and carries its own tokens.
    for (const auto& row : d.out.scheduled) {
      const Request* rb = s.find_request(2);
      if (row.request_id == 2 && rb && rb->n_preemptions > 0 && row.start == 0) {
        EXPECT_GE(rb->known_tokens(rb->samples[0]), static_cast<int32_t>(8 + b_outputs));
        const auto tokens = d.out.tokens(row);
        for (size_t p = 0; p < tokens.size(); ++p) {
          EXPECT_EQ(tokens[p], rb->token_at(rb->samples[0], static_cast<int32_t>(p)));
        }
        EXPECT_EQ(d.out.scheduled[0].request_id, 2);
      }
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GE(s.stats().preemptions_total, 1);
  EXPECT_EQ(d.outputs[1], toy_reference(a, 64, kVocab));
  EXPECT_EQ(d.outputs[2], toy_reference(b, 64, kVocab));
}

TEST(Preemption, PreemptedRequestGoesBackToTheHeadOfTheQueue) {
  SchedulerConfig c = tiny_config();
  c.kv.n_blocks = 8;
  c.kv.watermark = 0.0;
  c.max_seqs = 2;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 8, 20)).ok());
  ASSERT_TRUE(d.add(spec(2, 8, 12)).ok());
  d.step();
  ToyRequest urgent = spec(3, 4, 2);
  urgent.priority = -5;  // more important than both, but no slot is free
  ASSERT_TRUE(d.add(urgent).ok());
  while (s.stats().preemptions_total == 0 && d.steps < 50) d.step();
  ASSERT_EQ(d.out.preempted_request_ids, std::vector<RequestId>{2});
  // The slot request 2 gave up is not handed to a newcomer in the same step...
  for (const auto& row : d.out.scheduled) EXPECT_EQ(row.request_id, 1);
  // ...and request 2, back at the head, is admitted before the urgent newcomer.
  while (s.find_request(2)->status != RequestStatus::kRunning && d.steps < 100) {
    d.step();
    const Request* third = s.find_request(3);
    if (s.find_request(2)->status != RequestStatus::kRunning) {
      ASSERT_TRUE(third && third->status == RequestStatus::kWaiting) << "step " << d.steps;
    }
  }
  std::vector<RequestId> order;
  for (const auto& row : d.out.scheduled) order.push_back(row.request_id);
  EXPECT_EQ(order, (std::vector<RequestId>{2, 3}));  // both fit once request 1 is done
  ASSERT_TRUE(d.run(200));
  EXPECT_EQ(d.outputs[2], toy_reference(spec(2, 8, 12), 64, kVocab));
}

TEST(Preemption, LeastImportantRequestPreemptsItself) {
  SchedulerConfig c = tiny_config();
  c.kv.n_blocks = 6;
  c.kv.watermark = 0.0;
  c.max_batched_tokens = 64;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ASSERT_TRUE(d.add(spec(1, 12, 12)).ok());  // 3 blocks, grows to 6
  ASSERT_TRUE(d.add(spec(2, 8, 12)).ok());   // 2 blocks
  d.step();
  EXPECT_EQ(s.kv().n_used_blocks(), 5);
  // Block 6 goes to whoever needs it first; when request 2 (the newest) needs one that is
  // not there, nobody is less important than it: it preempts itself, 1 keeps running.
  while (s.stats().preemptions_total == 0 && d.steps < 50) d.step();
  EXPECT_EQ(d.out.preempted_request_ids, std::vector<RequestId>{2});
  ASSERT_EQ(d.out.scheduled.size(), 1u);
  EXPECT_EQ(d.out.scheduled[0].request_id, 1);
  ASSERT_TRUE(d.run(200));
}

TEST(Preemption, ParallelSamplesShareThePromptBlocks) {
  SchedulerConfig c = tiny_config();
  c.kv.n_blocks = 40;
  Scheduler s = make(c);
  ToyDriver d(s, kVocab);
  ToyRequest r = spec(1, 10, 6, /*n=*/4);  // 10 tokens: blocks of 4, 4, 2
  ASSERT_TRUE(d.add(r).ok());
  d.step();  // the carrier computes the prompt; its last row feeds all four samples
  ASSERT_EQ(d.out.scheduled.size(), 1u);
  const SeqId carrier = d.out.scheduled[0].seq_id;
  ASSERT_EQ(d.out.samples.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d.out.samples[i].row, 0);
  const Request* req = s.find_request(1);
  for (const auto& sample : req->samples) EXPECT_NE(sample.id, carrier);  // the row is the carrier
  EXPECT_EQ(s.kv().n_used_blocks(), 3);  // forked: the prompt's blocks counted once
  for (const auto& sample : req->samples) {
    ASSERT_TRUE(s.kv().contains(sample.id));
    EXPECT_TRUE(std::equal(s.kv().block_table(sample.id).begin(),
                           s.kv().block_table(sample.id).end(),
                           s.kv().block_table(req->samples[0].id).begin()));
  }
  EXPECT_EQ(s.kv().pool().ref_count(s.kv().block_table(req->samples[0].id)[0]), 4);
  d.step();  // each sample writes into the shared partial block: three copies, one in place
  EXPECT_EQ(d.out.freed_seq_ids.size(), 1u);  // the carrier
  ASSERT_EQ(d.out.scheduled.size(), 4u);  // each sample's row carries its own (forked) table
  for (const auto& row : d.out.scheduled) {
    const auto table = d.out.block_table(row);
    EXPECT_TRUE(std::equal(table.begin(), table.end(), s.kv().block_table(row.seq_id).begin(),
                           s.kv().block_table(row.seq_id).end()));
  }
  EXPECT_EQ(d.out.block_copies.size(), 3u);
  EXPECT_EQ(s.kv().n_used_blocks(), 2 + 4);
  EXPECT_EQ(s.kv().pool().ref_count(s.kv().block_table(req->samples[0].id)[0]), 4);
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.outputs[1], toy_reference(r, 64, kVocab));
  EXPECT_NE(d.outputs[1][0], d.outputs[1][1]);  // samples differ (their own RNG streams)
  EXPECT_EQ(s.kv().n_used_blocks(), 0);
}

TEST(Preemption, SamplesThatEndOnTheirFirstTokenAreNeverForked) {
  Scheduler s = make(tiny_config());
  ToyDriver d(s, kVocab);
  ToyRequest r = spec(1, 5, 1, /*n=*/3);
  ASSERT_TRUE(d.add(r).ok());
  ASSERT_TRUE(d.run(10));
  EXPECT_EQ(d.steps, 1);
  EXPECT_EQ(d.outputs[1], toy_reference(r, 64, kVocab));
  EXPECT_EQ(d.finished_order, std::vector<RequestId>{1});
  EXPECT_EQ(s.kv().n_used_blocks(), 0);
}

struct Workload {
  std::vector<std::pair<int64_t, ToyRequest>> arrivals;  // (step, request)
};

Workload random_workload(uint32_t seed, int n_requests, int32_t max_model_len,
                         int32_t max_n) {
  std::mt19937 rng(seed);
  Workload w;
  int64_t step = 0;
  for (int i = 0; i < n_requests; ++i) {
    step += rng() % 3;
    const int32_t prompt = 1 + static_cast<int32_t>(rng() % 36);
    const int32_t max_out = std::min<int32_t>(1 + rng() % 28, max_model_len - prompt);
    ToyRequest r = spec(i, prompt, max_out, 1 + static_cast<int32_t>(rng() % max_n));
    r.priority = static_cast<int32_t>(rng() % 3);
    if (rng() % 4 == 0) r.stop_token_ids = {static_cast<TokenId>(rng() % kVocab)};
    w.arrivals.push_back({step, std::move(r)});
  }
  return w;
}

// Runs the workload (arrivals by step) to completion and checks every output.
void run_workload(Scheduler& s, const Workload& w, int64_t* preemptions) {
  ToyDriver d(s, kVocab);
  size_t next = 0;
  std::vector<RequestId> rejected;  // more KV than the whole pool: refused up front
  while ((next < w.arrivals.size() || s.has_unfinished()) && d.steps < 5000) {
    while (next < w.arrivals.size() && w.arrivals[next].first <= d.steps) {
      const ToyRequest& r = w.arrivals[next++].second;
      const Status added = d.add(r);
      if (!added.ok()) {
        ASSERT_NE(added.message().find("KV blocks running alone"), std::string::npos)
            << added.to_string();
        rejected.push_back(r.id);
      }
    }
    d.step();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
  }
  ASSERT_FALSE(s.has_unfinished()) << "stuck after " << d.steps << " steps";
  EXPECT_LT(rejected.size(), w.arrivals.size() / 5);
  for (const auto& [step, r] : w.arrivals) {
    if (std::count(rejected.begin(), rejected.end(), r.id)) continue;
    const auto ref = toy_reference(r, s.config().max_model_len, kVocab);
    ASSERT_EQ(d.outputs[r.id], ref) << "request " << r.id;
    for (int32_t i = 0; i < r.n; ++i) {
      const bool stopped = !r.stop_token_ids.empty() && ref[i].back() == r.stop_token_ids[0];
      EXPECT_EQ(d.finish[r.id][i], stopped ? FinishReason::kStop : FinishReason::kLength);
    }
  }
  EXPECT_EQ(s.kv().n_used_blocks(), 0);
  d.step();  // the last frees are reported
  EXPECT_EQ(d.runner().n_unfreed_seqs(), 0u);  // every sequence that ran was reported freed
  *preemptions = s.stats().preemptions_total;
}

TEST(Preemption, RandomWorkloadsOnATinyPoolMatchRunningAlone) {
  int64_t total_preemptions = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    SchedulerConfig c = tiny_config();
    c.aging_steps = seed % 2 ? 0 : 8;
    Scheduler s = make(c);
    int64_t preemptions = 0;
    run_workload(s, random_workload(seed, 40, c.max_model_len, 3), &preemptions);
    ASSERT_FALSE(HasFatalFailure()) << "seed " << seed;
    total_preemptions += preemptions;
  }
  EXPECT_GT(total_preemptions, 20);  // the pool really was too small
}

TEST(Preemption, StaticPolicyRandomWorkloadMatchesRunningAlone) {
  SchedulerConfig c = tiny_config();
  c.policy = SchedulePolicy::kStatic;
  c.kv.n_blocks = 48;  // three whole contexts
  Scheduler s = make(c);
  int64_t preemptions = 0;
  run_workload(s, random_workload(7, 25, c.max_model_len, 2), &preemptions);
  EXPECT_EQ(preemptions, 0);  // reservations never run out
}

}  // namespace
}  // namespace tally
