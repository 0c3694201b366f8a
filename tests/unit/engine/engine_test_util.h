// Helpers for the engine tests: stories260K (bundled in models/) with toy settings, an event
// collector that waits for requests to end, and a request's output when it runs alone.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_core.h"
#include "support/test_data.h"

namespace tally_test {

inline tally::EngineConfig stories_config() {
  tally::EngineConfig c;
  c.model_path = repo_path("models/stories260K.gguf");
  c.threads = 1;
  c.max_batched_tokens = 64;
  c.max_seqs = 16;
  c.max_model_len = 256;
  c.block_size = 16;
  c.kv_type = tally::DType::kF32;  // the tests' pool sizes are worked out at 1280 B a token
  c.kv_cache_memory = int64_t{1} << 20;  // 1 MiB: 51 blocks of 16 tokens for stories260K
  return c;
}

inline std::unique_ptr<tally::Engine> make_engine(const tally::EngineConfig& c) {
  auto e = tally::Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

inline tally::EngineRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  tally::EngineRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  return r;
}

// Everything one request's callback saw, per sample.
struct RequestLog {
  std::vector<tally::EngineEvent> events;
  std::vector<std::vector<int32_t>> tokens;  // [sample] kToken ids
  std::vector<std::string> text;             // [sample] kToken + kFinished text
  std::vector<tally::FinishReason> finish;   // [sample]
  bool done = false;
  bool error = false;
  tally::Status status;
};

// Thread-safe: callbacks run on the engine thread, tests read after wait().
class Collector {
 public:
  tally::EngineEventCallback callback(int64_t key) {
    return [this, key](const tally::EngineEvent& e) { on_event(key, e); };
  }
  void on_event(int64_t key, const tally::EngineEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    RequestLog& log = logs_[key];
    log.events.push_back(e);
    const auto i = static_cast<size_t>(e.index);
    if (log.tokens.size() <= i) {
      log.tokens.resize(i + 1);
      log.text.resize(i + 1);
      log.finish.resize(i + 1, tally::FinishReason::kNone);
    }
    if (e.kind == tally::EngineEventKind::kToken) {
      log.tokens[i].push_back(e.token);
      log.text[i] += e.text;
    } else if (e.kind == tally::EngineEventKind::kFinished) {
      log.text[i] += e.text;
      log.finish[i] = e.finish;
    } else {
      log.error = true;
      log.status = e.status;
    }
    if (e.request_done) {
      log.done = true;
      ++n_done_;
    }
    cv_.notify_all();
  }
  // Waits until `n` requests are done; false on timeout.
  bool wait(int64_t n, double seconds = 60) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return n_done_ >= n; });
  }
  // Waits until request `key` has seen `n` kToken events (any sample); false on timeout.
  bool wait_tokens(int64_t key, size_t n, double seconds = 60) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
      size_t total = 0;
      for (const auto& t : logs_[key].tokens) total += t.size();
      return total >= n || logs_[key].done;
    });
  }
  RequestLog log(int64_t key) {
    std::lock_guard<std::mutex> lock(mu_);
    return logs_[key];
  }
  int64_t n_done() {
    std::lock_guard<std::mutex> lock(mu_);
    return n_done_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, RequestLog> logs_;
  int64_t n_done_ = 0;
};

// Runs one request on `engine` alone and returns its log.
inline RequestLog run_alone(tally::Engine& engine, tally::EngineRequest request) {
  Collector c;
  auto id = engine.submit(std::move(request), c.callback(0));
  EXPECT_TRUE(id.ok()) << id.status().to_string();
  if (!id.ok()) return {};
  EXPECT_TRUE(c.wait(1));
  return c.log(0);
}

// Submits every request to `engine` at once and returns their logs, in order.
inline std::vector<RequestLog> run_all_requests(tally::Engine& engine,
                                            const std::vector<tally::EngineRequest>& reqs) {
  Collector c;
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto id = engine.submit(reqs[i], c.callback(static_cast<int64_t>(i)));
    EXPECT_TRUE(id.ok()) << id.status().to_string();
  }
  EXPECT_TRUE(c.wait(static_cast<int64_t>(reqs.size()), 300));
  std::vector<RequestLog> logs;
  for (size_t i = 0; i < reqs.size(); ++i) logs.push_back(c.log(static_cast<int64_t>(i)));
  return logs;
}

// Adds `reqs` to `core` `rounds` times, stepping until each round is done and aborting a
// random request (finished or not) after one step in four; every request must end. Then an
// empty step publishes the final counters.
inline void run_with_random_cancellations(tally::EngineCore& core,
                                          const std::vector<tally::EngineRequest>& reqs,
                                          int rounds, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t ended = 0;
  tally::RequestId next = 1;
  for (int round = 0; round < rounds; ++round) {
    for (const auto& r : reqs) {
      ASSERT_TRUE(core.check_request(r).ok());
      core.add_request(next++, r, 1, [&ended](const tally::EngineEvent& e) {
        if (e.request_done) ++ended;
      }, tally::EngineClock::now());
    }
    while (core.has_unfinished()) {
      core.step();
      if (rng() % 4 == 0) core.abort_request(1 + static_cast<tally::RequestId>(rng() % next));
    }
  }
  EXPECT_EQ(ended, next - 1);
  core.step();
}

// A deterministic prompt: BOS then `len - 1` ids from a small LCG over [3, n_vocab).
inline std::vector<int32_t> make_prompt(int32_t len, uint64_t seed, int32_t n_vocab = 512) {
  std::vector<int32_t> p{1};
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  while (static_cast<int32_t>(p.size()) < len) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p.push_back(3 + static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab - 3)));
  }
  return p;
}

}  // namespace tally_test
