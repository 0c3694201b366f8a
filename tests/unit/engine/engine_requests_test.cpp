// One feature of the engine per test: cancel, n > 1, back-pressure, refused requests, a
// failing request, stop strings, min_tokens, shutdown, logprobs.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using tally::EngineEvent;
using tally::EngineEventKind;
using tally::ErrorCode;
using tally::FinishReason;

TEST(EngineRequests, CancelMidStreamFreesTheBlocks) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  Collector c;
  tally::EngineRequest r = greedy_request(make_prompt(40, 1), 200);
  r.ignore_eos = true;
  r.n = 2;
  r.sampling.temperature = 0.7f;
  std::atomic<tally::RequestId> id{0};
  int seen = 0;
  auto cb = [&](const EngineEvent& e) {
    c.on_event(0, e);
    // From the callback, so the cancel lands after exactly this step (cancel only queues).
    // The event's own id: submit() may not have returned it yet on a fast step.
    if (e.kind == EngineEventKind::kToken && ++seen == 10) engine->cancel(e.request_id);
  };
  auto got = engine->submit(r, cb);
  ASSERT_TRUE(got.ok());
  id = *got;
  ASSERT_TRUE(c.wait(1));
  const RequestLog log = c.log(0);
  EXPECT_FALSE(log.error);
  ASSERT_EQ(log.finish.size(), 2u);
  EXPECT_EQ(log.finish[0], FinishReason::kAbort);
  EXPECT_EQ(log.finish[1], FinishReason::kAbort);
  EXPECT_EQ(log.tokens[0].size() + log.tokens[1].size(), 10u);  // 5 steps of 2 samples
  EXPECT_EQ(log.events.back().kind, EngineEventKind::kFinished);
  EXPECT_TRUE(log.events.back().request_done);
  const tally::EngineMetrics m = engine->metrics();
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
  EXPECT_EQ(m.num_requests_running, 0);
  engine->cancel(id);     // finished: ignored
  engine->cancel(12345);  // unknown: ignored
  EXPECT_TRUE(run_alone(*engine, greedy_request(make_prompt(8, 2), 4)).done);
}

TEST(EngineRequests, ParallelSamplesShareThePromptAndMatchSingleSamples) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  tally::EngineRequest r = greedy_request(make_prompt(40, 3), 24);
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.seed = 42;
  r.n = 3;
  Collector c;
  std::atomic<int32_t> used_at_first = -1;
  auto cb = [&](const EngineEvent& e) {
    if (e.kind == EngineEventKind::kToken && used_at_first.load() < 0) {
      const auto m = engine->metrics();
      used_at_first = m.kv_blocks_total - m.kv_blocks_free;
    }
    c.on_event(0, e);
  };
  ASSERT_TRUE(engine->submit(r, cb).ok());
  ASSERT_TRUE(c.wait(1));
  const RequestLog together = c.log(0);
  // After the prompt the three samples hold its 3 blocks (40 tokens) once, not 3 times.
  EXPECT_EQ(used_at_first.load(), 3);
  ASSERT_EQ(together.tokens.size(), 3u);
  EXPECT_NE(together.tokens[0], together.tokens[1]);  // different RNG streams
  for (int32_t i = 0; i < 3; ++i) {
    tally::EngineRequest one = r;
    one.n = 1;
    one.sampling.seed = tally::engine_sample_seed(42, i);
    const RequestLog alone = run_alone(*engine, one);
    EXPECT_EQ(together.tokens[i], alone.tokens.at(0)) << "sample " << i;
    EXPECT_EQ(together.finish[i], alone.finish.at(0)) << "sample " << i;
  }
  EXPECT_EQ(tally::engine_sample_seed(42, 0), 42u);
  int finished = 0;
  for (const EngineEvent& e : together.events) {
    if (e.kind != EngineEventKind::kFinished) continue;
    ++finished;
    EXPECT_EQ(e.request_done, finished == 3);
  }
  EXPECT_EQ(finished, 3);
}

TEST(EngineRequests, FullQueueAnswersResourceExhausted) {
  tally::EngineConfig cfg = stories_config();
  cfg.max_waiting = 3;
  auto engine = make_engine(cfg);
  ASSERT_TRUE(engine);
  // Hold the engine thread inside a callback so nothing leaves the queue meanwhile.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  Collector c;
  bool first = true;
  auto blocker = [&](const EngineEvent& e) {
    c.on_event(100, e);
    if (first) {
      first = false;
      entered.set_value();
      released.wait();
    }
  };
  ASSERT_TRUE(engine->submit(greedy_request(make_prompt(8, 1), 4), blocker).ok());
  entered.get_future().wait();
  for (int i = 0; i < 3; ++i) {
    auto id = engine->submit(greedy_request(make_prompt(8, 2 + i), 4), c.callback(i));
    ASSERT_TRUE(id.ok()) << i << ": " << id.status().to_string();
  }
  auto refused = engine->submit(greedy_request(make_prompt(8, 9), 4), c.callback(9));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kResourceExhausted);
  release.set_value();
  ASSERT_TRUE(c.wait(4));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(c.log(i).error);
  // Room again once the queue drained.
  EXPECT_TRUE(run_alone(*engine, greedy_request(make_prompt(8, 10), 4)).done);
}

TEST(EngineRequests, RefusesBadRequestsAtOnce) {
  auto engine = make_engine(stories_config());  // context 256
  ASSERT_TRUE(engine);
  Collector c;
  auto too_long = engine->submit(greedy_request(make_prompt(300, 1), 4), c.callback(0));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("300"), std::string::npos);
  EXPECT_NE(too_long.status().message().find("256"), std::string::npos);
  EXPECT_EQ(engine->submit(greedy_request(make_prompt(256, 1), 4), c.callback(0)).status().code(),
            ErrorCode::kOutOfRange);
  tally::EngineRequest bad = greedy_request(make_prompt(8, 1), 4);
  bad.sampling.top_p = 2.0f;
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy_request({1, 600}, 4);  // vocabulary is 512
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy_request({}, 4);
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy_request(make_prompt(8, 1), 0);
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy_request(make_prompt(8, 1), 4);
  bad.n = 17;  // max_seqs 16
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy_request(make_prompt(8, 1), 4);
  bad.stop = {""};
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  // A request needing more KV than the whole pool (51 blocks) running alone.
  bad = greedy_request(make_prompt(100, 1), 150);
  bad.n = 8;
  EXPECT_EQ(engine->submit(bad, c.callback(0)).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.n_done(), 0);  // refused requests get no events
}

TEST(EngineRequests, AFailingRequestDoesNotDisturbTheOthers) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  std::vector<tally::EngineRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(greedy_request(make_prompt(10 + 7 * i, i), 30));
  std::vector<RequestLog> alone;
  for (const auto& r : reqs) alone.push_back(run_alone(*engine, r));

  Collector c;
  int tokens = 0;
  auto thrower = [&](const EngineEvent& e) {
    c.on_event(99, e);
    if (e.kind == EngineEventKind::kToken && ++tokens == 3) throw std::runtime_error("boom");
  };
  tally::EngineRequest doomed = greedy_request(make_prompt(30, 77), 100);
  doomed.ignore_eos = true;
  ASSERT_TRUE(engine->submit(doomed, thrower).ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(engine->submit(reqs[i], c.callback(static_cast<int64_t>(i))).ok());
  }
  ASSERT_TRUE(c.wait(7));
  const RequestLog failed = c.log(99);
  EXPECT_TRUE(failed.error);
  EXPECT_NE(failed.status.message().find("boom"), std::string::npos);
  EXPECT_EQ(failed.events.back().kind, EngineEventKind::kError);
  EXPECT_EQ(failed.tokens.at(0).size(), 3u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const RequestLog got = c.log(static_cast<int64_t>(i));
    EXPECT_FALSE(got.error);
    EXPECT_EQ(got.tokens, alone[i].tokens) << i;
  }
  const auto m = engine->metrics();
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
}

TEST(EngineRequests, StopStringEndsTheSampleAndIsNotInTheText) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  tally::EngineRequest r =
      greedy_request(engine->tokenizer().encode("Once upon a time", true, false), 60);
  r.ignore_eos = true;
  const RequestLog full = run_alone(*engine, r);
  const std::string text = full.text.at(0);
  ASSERT_GT(text.size(), 40u);
  const std::string stop = text.substr(20, 5);
  const size_t at = text.find(stop);
  r.stop = {"zzzz-never", stop};
  const RequestLog cut = run_alone(*engine, r);
  EXPECT_EQ(cut.finish.at(0), FinishReason::kStop);
  EXPECT_EQ(cut.text.at(0), text.substr(0, at));
  EXPECT_EQ(cut.events.back().stop_string, stop);
  EXPECT_LT(cut.tokens.at(0).size(), full.tokens.at(0).size());
  const auto m = engine->metrics();
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
}

TEST(EngineRequests, MinTokensKeepsEndOfGenerationAway) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  // A prompt whose greedy story ends (EOS or BOS) inside the context (19: after 188 tokens).
  for (uint64_t seed = 19; seed < 60; ++seed) {
    tally::EngineRequest r = greedy_request(make_prompt(6, seed), 200);
    const RequestLog free_run = run_alone(*engine, r);
    if (free_run.finish.at(0) != FinishReason::kStop) continue;
    const size_t n = free_run.tokens.at(0).size();
    const tally::EngineEvent& end = free_run.events.back();
    EXPECT_EQ(end.completion_tokens, static_cast<int32_t>(n) + 1);  // the stop token counts
    EXPECT_GE(end.token, 0);
    r.min_tokens = static_cast<int32_t>(n) + 5;
    const RequestLog held = run_alone(*engine, r);
    ASSERT_GE(held.tokens.at(0).size(), n + 5);
    EXPECT_TRUE(
        std::equal(free_run.tokens[0].begin(), free_run.tokens[0].end(), held.tokens[0].begin()));
    return;
  }
  FAIL() << "no prompt ended before 200 tokens";
}

TEST(EngineRequests, ShutdownAbortsWhatIsInFlightAndRefusesNewWork) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  Collector c;
  for (int i = 0; i < 5; ++i) {
    tally::EngineRequest r = greedy_request(make_prompt(20 + i, i), 220);
    r.ignore_eos = true;
    ASSERT_TRUE(engine->submit(r, c.callback(i)).ok());
  }
  ASSERT_TRUE(c.wait_tokens(0, 2));
  engine->shutdown(0);
  EXPECT_EQ(c.n_done(), 5);  // every request got its last event before shutdown returned
  for (int i = 0; i < 5; ++i) {
    const RequestLog log = c.log(i);
    EXPECT_TRUE(log.done);
    EXPECT_EQ(log.finish.at(0), FinishReason::kAbort) << i;
  }
  auto late = engine->submit(greedy_request(make_prompt(8, 1), 4), c.callback(9));
  EXPECT_EQ(late.status().code(), ErrorCode::kCancelled);
  engine->shutdown(0);  // twice is fine
}

TEST(EngineRequests, ShutdownWithTimeoutLetsRunningRequestsFinish) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  Collector c;
  for (int i = 0; i < 4; ++i) {
    tally::EngineRequest r = greedy_request(make_prompt(12, i), 20);
    r.ignore_eos = true;
    ASSERT_TRUE(engine->submit(r, c.callback(i)).ok());
  }
  engine->shutdown(60);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.log(i).finish.at(0), FinishReason::kLength) << i;
    EXPECT_EQ(c.log(i).tokens.at(0).size(), 20u);
  }
}

TEST(EngineRequests, LogprobsComeWithEachToken) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  tally::EngineRequest r = greedy_request(make_prompt(10, 4), 8);
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = 3;
  const RequestLog log = run_alone(*engine, r);
  int n = 0;
  for (const EngineEvent& e : log.events) {
    if (e.kind != EngineEventKind::kToken) continue;
    ++n;
    ASSERT_TRUE(e.logprob.has_value());
    EXPECT_LE(*e.logprob, 0.0f);
    ASSERT_EQ(e.top_logprobs.size(), 3u);
    EXPECT_EQ(e.top_logprobs[0].token, e.token);  // greedy: the most likely one
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace tally_test
