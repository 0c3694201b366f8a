// The scheduler with the prefix cache: outputs equal the reference (the toy runner reads every
// position back through the block tables, cached ones included), hits start prefill later,
// salts, the longest-prefix-first order and its bound, and one computation per shared block.
#include <algorithm>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "toy_runner.h"

namespace tally {
namespace {

using tally_test::toy_reference;
using tally_test::ToyDriver;
using tally_test::ToyRequest;

constexpr int32_t kVocab = 50;

SchedulerConfig prefix_config(bool cache) {
  SchedulerConfig c;
  c.max_batched_tokens = 48;
  c.max_seqs = 4;
  c.max_model_len = 160;
  c.max_waiting = 512;
  c.aging_steps = 0;
  c.kv = KvCacheConfig{80, 4, 0.0};
  c.kv.enable_prefix_cache = cache;
  return c;
}

Scheduler make_sched(const SchedulerConfig& c) {
  auto s = Scheduler::create(c);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

ToyRequest with_prefix(RequestId id, const std::vector<TokenId>& prefix, int32_t tail,
                       int32_t max_tokens, int32_t n = 1) {
  ToyRequest r;
  r.id = id;
  r.prompt = prefix;
  for (int32_t i = 0; i < tail; ++i) r.prompt.push_back((id * 13 + i * 7) % kVocab);
  r.max_tokens = max_tokens;
  r.n = n;
  return r;
}

std::vector<TokenId> stem(int32_t which, int32_t len) {
  std::vector<TokenId> t;
  for (int32_t i = 0; i < len; ++i) t.push_back((which * 31 + i * 3 + 1) % kVocab);
  return t;
}

// Random requests over a few shared stems (lengths on and off block boundaries), n = 1 and 2,
// arriving over time; every output equals the request run alone.
std::map<RequestId, std::vector<std::vector<TokenId>>> run_shared_prefix_load(
    Scheduler& s, uint32_t seed, int64_t* hits) {
  std::mt19937 rng(seed);
  ToyDriver d(s, kVocab);
  std::vector<ToyRequest> reqs;
  for (RequestId id = 1; id <= 60; ++id) {
    const int32_t len = static_cast<int32_t>(rng() % 40);
    reqs.push_back(with_prefix(id, stem(static_cast<int32_t>(rng() % 3), len),
                               1 + static_cast<int32_t>(rng() % 9),
                               1 + static_cast<int32_t>(rng() % 12),
                               rng() % 5 == 0 ? 2 : 1));
  }
  size_t next = 0;
  while (next < reqs.size() || s.has_unfinished()) {
    for (int k = 0; k < 3 && next < reqs.size(); ++k) {
      EXPECT_TRUE(d.add(reqs[next++]).ok());
    }
    d.step();
    if (::testing::Test::HasFatalFailure() || d.steps > 5000) break;
  }
  for (const ToyRequest& r : reqs) {
    EXPECT_EQ(d.outputs[r.id], toy_reference(r, s.config().max_model_len, kVocab))
        << "request " << r.id;
  }
  *hits = s.stats().prefix_cache_hits;
  return {d.outputs.begin(), d.outputs.end()};
}

TEST(PrefixSchedule, OutputsEqualWithAndWithoutTheCache) {
  int64_t hits_off = 0;
  int64_t hits_on = 0;
  Scheduler off = make_sched(prefix_config(false));
  const auto a = run_shared_prefix_load(off, 7, &hits_off);
  Scheduler on = make_sched(prefix_config(true));
  const auto b = run_shared_prefix_load(on, 7, &hits_on);
  EXPECT_EQ(a, b);
  EXPECT_EQ(hits_off, 0);
  EXPECT_GT(hits_on, 100);
  EXPECT_LE(on.stats().prefix_cache_hits, on.stats().prefix_cache_queries);
}

TEST(PrefixSchedule, CollidingKeysKeepOutputsRight) {
  Scheduler on = make_sched(prefix_config(true));
  on.force_prefix_key_for_test(PrefixKey{5, 5});
  int64_t hits = 0;
  run_shared_prefix_load(on, 11, &hits);
  EXPECT_GT(hits, 0);
}

TEST(PrefixSchedule, SmallPoolPreemptsAndEvictsAndStaysRight) {
  SchedulerConfig c = prefix_config(true);
  c.kv.n_blocks = 24;
  Scheduler on = make_sched(c);
  int64_t hits = 0;
  run_shared_prefix_load(on, 13, &hits);
  EXPECT_GT(on.stats().preemptions_total, 0);
}

TEST(PrefixSchedule, AHitStartsPrefillAtTheFirstUncachedToken) {
  Scheduler s = make_sched(prefix_config(true));
  ToyDriver d(s, kVocab);
  const std::vector<TokenId> p = stem(1, 18);  // 4 full blocks + 2
  ASSERT_TRUE(d.add(with_prefix(1, p, 3, 2)).ok());
  ASSERT_TRUE(d.run(100));
  ASSERT_TRUE(d.add(with_prefix(2, p, 5, 2)).ok());
  d.step();
  ASSERT_EQ(d.out.scheduled.size(), 1u);
  EXPECT_EQ(d.out.scheduled[0].start, 16);
  EXPECT_EQ(d.out.scheduled[0].n_tokens, 18 + 5 - 16);
  EXPECT_EQ(s.find_request(2)->num_cached_tokens, 16);
  // A prompt that is all cached full blocks still computes its last token.
  ASSERT_TRUE(d.run(100));
  ToyRequest exact = with_prefix(3, stem(1, 16), 0, 2);
  ASSERT_TRUE(d.add(exact).ok());
  d.step();
  EXPECT_EQ(d.out.scheduled[0].start, 12);
  EXPECT_EQ(d.out.scheduled[0].n_tokens, 4);
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.outputs[3], toy_reference(exact, s.config().max_model_len, kVocab));
}

TEST(PrefixSchedule, SaltsGetNoCrossHits) {
  Scheduler s = make_sched(prefix_config(true));
  ToyDriver d(s, kVocab);
  const std::vector<TokenId> p = stem(2, 20);
  ToyRequest a = with_prefix(1, p, 1, 1);
  a.cache_salt = "tenant-a";
  ASSERT_TRUE(d.add(a).ok());
  ASSERT_TRUE(d.run(100));
  ToyRequest b = with_prefix(2, p, 1, 3);
  b.cache_salt = "tenant-b";
  ToyRequest c = with_prefix(3, p, 1, 3);  // no salt
  ASSERT_TRUE(d.add(b).ok());
  ASSERT_TRUE(d.add(c).ok());
  d.step();
  ASSERT_NE(s.find_request(2), nullptr);
  ASSERT_NE(s.find_request(3), nullptr);
  EXPECT_EQ(s.find_request(2)->num_cached_tokens, 0);
  EXPECT_EQ(s.find_request(3)->num_cached_tokens, 0);
  ASSERT_TRUE(d.run(100));
  ToyRequest a2 = with_prefix(4, p, 2, 3);
  a2.cache_salt = "tenant-a";
  ASSERT_TRUE(d.add(a2).ok());
  d.step();
  ASSERT_NE(s.find_request(4), nullptr);
  EXPECT_EQ(s.find_request(4)->num_cached_tokens, 20);
}

TEST(PrefixSchedule, TwoRequestsSharingAnUncachedPrefixComputeItOnce) {
  Scheduler s = make_sched(prefix_config(true));
  ToyDriver d(s, kVocab);
  const std::vector<TokenId> p = stem(0, 16);
  ASSERT_TRUE(d.add(with_prefix(1, p, 2, 3)).ok());
  ASSERT_TRUE(d.add(with_prefix(2, p, 3, 3)).ok());
  d.step();
  ASSERT_EQ(d.out.scheduled.size(), 1u);  // the second waits one step...
  EXPECT_EQ(d.out.scheduled[0].request_id, 1);
  d.step();
  const Request* second = s.find_request(2);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->num_cached_tokens, 16);  // ...and hits
  ASSERT_TRUE(d.run(100));
}

TEST(PrefixSchedule, ARequestWaitsForAPrefixBeingComputedInChunks) {
  SchedulerConfig c = prefix_config(true);
  c.max_batched_tokens = 8;  // a 40-token prompt takes 5 steps
  Scheduler s = make_sched(c);
  ToyDriver d(s, kVocab);
  const std::vector<TokenId> p = stem(3, 36);
  ASSERT_TRUE(d.add(with_prefix(1, p, 4, 2)).ok());
  d.step();
  ASSERT_TRUE(d.add(with_prefix(2, p, 2, 2)).ok());  // arrives while 1 is mid-prompt
  while (s.find_request(2)->status == RequestStatus::kWaiting && d.steps < 20) {
    const Request* first = s.find_request(1);
    const int32_t computed_before = first ? first->samples[0].num_computed : 40;
    d.step();
    if (s.find_request(2)->status == RequestStatus::kWaiting) {
      EXPECT_LT(computed_before, 36) << "2 waited past the shared prefix";
    }
  }
  EXPECT_EQ(s.find_request(2)->num_cached_tokens, 36);  // all 9 shared blocks, computed once
  ASSERT_TRUE(d.run(100));
  EXPECT_EQ(d.outputs[2], toy_reference(with_prefix(2, p, 2, 2), c.max_model_len, kVocab));
}

// Steps from arrival to first schedule of each request.
std::map<RequestId, int64_t> first_scheduled_steps(bool cache) {
  SchedulerConfig c = prefix_config(cache);
  c.max_seqs = 2;
  c.max_batched_tokens = 64;
  Scheduler s = make_sched(c);
  ToyDriver d(s, kVocab);
  // Warm the cache with one stem, then queue 24 requests at once: every third one shares it.
  const std::vector<TokenId> warm = stem(4, 32);
  EXPECT_TRUE(d.add(with_prefix(100, warm, 1, 1)).ok());
  EXPECT_TRUE(d.run(100));
  std::map<RequestId, int64_t> first;
  for (RequestId id = 1; id <= 24; ++id) {
    const bool shares = id % 3 == 0;
    EXPECT_TRUE(d.add(with_prefix(id, shares ? warm : stem(static_cast<int32_t>(id) + 5, 28),
                                  2, 4)).ok());
  }
  const int64_t start = d.steps;
  while (s.has_unfinished() && d.steps < 2000) {
    d.step();
    for (const ScheduledSeq& row : d.out.scheduled) first.emplace(row.request_id, d.steps - start);
  }
  return first;
}

TEST(PrefixSchedule, LongestPrefixFirstButNobodyWaitsOverThreeTimesItsFcfsWait) {
  const auto fcfs = first_scheduled_steps(false);
  const auto lpm = first_scheduled_steps(true);
  ASSERT_EQ(fcfs.size(), 24u);
  ASSERT_EQ(lpm.size(), 24u);
  bool some_sooner = false;
  for (const auto& [id, wait] : lpm) {
    EXPECT_LE(wait, 3 * std::max<int64_t>(fcfs.at(id), 1)) << "request " << id;
    some_sooner = some_sooner || wait < fcfs.at(id);
  }
  EXPECT_TRUE(some_sooner);  // cached requests did move up
}

}  // namespace
}  // namespace tally
