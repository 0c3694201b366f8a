// The Engine behind the interface: an EngineCore stepped on its own thread, a queue in front
// of it, the events out through the core's callbacks.
//
// Threads: submit(), cancel(), shutdown() take mu_ briefly; metrics() reads the core's
// published snapshot. The engine thread alone touches the core (besides its thread-safe
// check_request() and accessors) and takes mu_ only to drain the queue and to publish its
// waiting count. Callbacks run on the engine thread with no lock held.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_core.h"

namespace tally {

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(std::unique_ptr<EngineCore> core);
  ~EngineImpl() override;

  Status check_request(const EngineRequest& request) const override {
    return core_->check_request(request);
  }
  Result<RequestId> submit(EngineRequest request, EngineEventCallback on_event) override;
  void cancel(RequestId id) override;
  EngineMetrics metrics() const override { return core_->metrics(); }
  const MemoryLedger& ledger() const override { return core_->ledger(); }
  const Tokenizer& tokenizer() const override { return core_->tokenizer(); }
  const ModelConfig& model_config() const override { return core_->model_config(); }
  int32_t max_model_len() const override { return core_->max_model_len(); }
  void shutdown(double timeout_seconds) override;

  void start();

 private:
  struct Submitted {
    RequestId id = 0;
    EngineRequest request;
    uint64_t seed = 0;
    EngineEventCallback on_event;
    EngineClock::time_point arrival;
  };

  // engine_loop.cpp: the thread.
  void loop();
  bool wait_for_work();  // false: stop now
  void take_submitted();

  std::unique_ptr<EngineCore> core_;  // the engine thread only (but see above)
  std::vector<Submitted> taken_;
  std::vector<RequestId> cancels_taken_;

  // Shared, under mu_.
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the engine thread sleeps on it
  std::condition_variable idle_cv_;  // shutdown() waits on it for running requests to end
  std::vector<Submitted> inbox_;
  std::vector<RequestId> cancels_;
  int64_t queued_ = 0;  // inbox + the scheduler's waiting queue, as last published
  RequestId next_id_ = 1;
  bool accepting_ = true;
  bool abort_all_ = false;
  bool stop_ = false;
  bool idle_ = true;
  std::thread thread_;
  std::mutex join_mu_;  // shutdown() from two threads joins once
};

}  // namespace tally
