// An Engine for the server's tests: no model, a scripted token stream on its own thread, so
// HTTP, JSON, SSE, cancellation and errors can be tested fast and exactly. The tokenizer is
// the bundled model's (for prompts and detokenize).
//
// Each request produces max_tokens tokens (or script.size() when shorter); token i's text is
// script[i % script.size()] (so invalid UTF-8 and split characters can be scripted). With
// ignore_eos false and stop_at set, the sample ends with kStop after that many tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {

class FakeEngine final : public tally::Engine {
 public:
  struct Script {
    std::vector<std::string> texts = {"a"};  // text of token i = texts[i % size]
    int32_t stop_at = -1;                    // end with kStop after this many tokens
    std::chrono::milliseconds per_token{0};  // delay before each token
    tally::Status refuse;                    // submit() answers this when not ok
    bool fail_midway = false;                // a kError after the first token

    static Script of(std::vector<std::string> texts, int32_t stop_at = -1) {
      Script s;
      s.texts = std::move(texts);
      s.stop_at = stop_at;
      return s;
    }
  };

  FakeEngine();
  ~FakeEngine() override;

  void set_script(Script script);

  // The real engine's rules (check_engine_request) for a 256-token context.
  tally::Status check_request(const tally::EngineRequest& request) const override;
  tally::Result<tally::RequestId> submit(tally::EngineRequest request,
                                         tally::EngineEventCallback on_event) override;
  void cancel(tally::RequestId id) override;
  tally::EngineMetrics metrics() const override;
  const tally::MemoryLedger& ledger() const override { return ledger_; }
  const tally::Tokenizer& tokenizer() const override { return *tokenizer_; }
  const tally::ModelConfig& model_config() const override { return config_; }
  int32_t max_model_len() const override { return 256; }
  void shutdown(double timeout_seconds) override;

  // What the tests check.
  int cancelled_count() const { return cancelled_total_.load(); }
  int submitted_count() const { return submitted_total_.load(); }
  int running_count() const;
  tally::EngineRequest last_request() const;

 private:
  struct Job {
    tally::RequestId id;
    tally::EngineRequest request;
    tally::EngineEventCallback on_event;
  };
  void loop();
  void run_job(Job& job, const Script& script);
  bool is_cancelled(tally::RequestId id) const;

  std::unique_ptr<tally::Tokenizer> tokenizer_;
  tally::ModelConfig config_;
  tally::MemoryLedger ledger_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::set<tally::RequestId> cancelled_;
  std::set<tally::RequestId> running_;
  Script script_;
  tally::EngineRequest last_request_;
  tally::RequestId next_id_ = 1;
  bool stopping_ = false;
  std::atomic<int> cancelled_total_{0};
  std::atomic<int> submitted_total_{0};
  std::thread thread_;
};

}  // namespace tally_test
