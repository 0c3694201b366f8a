// The Engine behind the interface: the step loop's thread, the queue in, the events out.
//
// Threads: submit(), cancel(), shutdown(), metrics() take mu_ (or metrics_mu_) briefly; the
// engine thread owns everything under "engine thread only" and takes mu_ only to drain the
// queue and to publish its waiting count. Callbacks run on the engine thread with no lock
// held.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "engine/engine_sizing.h"
#include "engine/request_state.h"
#include "model/model.h"
#include "runner/batch_runner.h"
#include "sched/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace tally {

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineConfig& config, std::unique_ptr<Model> model,
             std::unique_ptr<Tokenizer> tokenizer, const EngineSizing& sizing, Scheduler scheduler,
             std::unique_ptr<BatchRunner> runner);
  ~EngineImpl() override;

  Result<RequestId> submit(EngineRequest request, EngineEventCallback on_event) override;
  void cancel(RequestId id) override;
  EngineMetrics metrics() const override;
  const MemoryLedger& ledger() const override { return ledger_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ModelConfig& model_config() const override { return model_->config(); }
  int32_t max_model_len() const override { return sched_config_.max_model_len; }
  void shutdown(double timeout_seconds) override;

  void start();

 private:
  struct Submitted {
    RequestId id = 0;
    EngineRequest request;
    RequestSpec spec;
    uint64_t seed = 0;
    EngineEventCallback on_event;
    EngineClock::time_point arrival;
  };
  struct Outgoing {
    RequestState* request;
    EngineEvent event;
  };

  Status check_request(const EngineRequest& request) const;
  void build_ledger(const EngineSizing& sizing);
  void log_ledger() const;

  // engine_loop.cpp: the thread.
  void loop();
  bool wait_for_work();  // false: stop now
  void take_submitted(std::vector<Submitted>& batch);
  void abort_everything();
  void publish_metrics();

  // engine_step.cpp: one step.
  void step();
  void sample_slots();
  void translate_events();
  void on_token(RequestState& r, const SchedulerEvent& e, EngineClock::time_point now);
  void finish_sample(RequestState& r, int32_t index, FinishReason why, int32_t token,
                     const std::string& stop_string, EngineClock::time_point now);
  void deliver();
  void fail_request(RequestState& r, const Status& status);
  void fail_scheduled(const Status& status);
  void forget_done();

  // Immutable after construction.
  EngineConfig config_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  SchedulerConfig sched_config_;
  MemoryLedger ledger_;
  std::vector<int32_t> stop_tokens_;  // end-of-generation tokens and BOS
  int32_t n_vocab_ = 0;

  // Engine thread only.
  Scheduler sched_;
  std::unique_ptr<BatchRunner> runner_;
  ThreadPool pool_;
  std::unordered_map<RequestId, std::unique_ptr<RequestState>> requests_;
  SchedulerOutput out_;
  std::vector<int32_t> sampled_;
  std::vector<SchedulerEvent> sched_events_;
  std::vector<Outgoing> outbox_;
  std::vector<RequestId> done_ids_;
  std::vector<Submitted> taken_;
  std::vector<RequestId> cancels_taken_;
  int64_t prompt_tokens_total_ = 0;
  int64_t generation_tokens_total_ = 0;

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

  mutable std::mutex metrics_mu_;
  EngineMetrics metrics_;
};

}  // namespace tally
