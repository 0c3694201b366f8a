#include "fake_engine.h"

#include <gtest/gtest.h>

#include "engine/request_check.h"
#include "io/gguf.h"
#include "support/test_data.h"

namespace tally_test {

using namespace tally;

FakeEngine::FakeEngine() {
  auto gguf = io::GgufFile::open(repo_path("models/stories260K.gguf"));
  EXPECT_TRUE(gguf.ok()) << gguf.status().message();
  auto tok = Tokenizer::from_gguf(*gguf);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  tokenizer_ = std::move(*tok);
  config_.n_vocab = tokenizer_->n_vocab();
  config_.context_length = 256;
  thread_ = std::thread([this] { loop(); });
}

FakeEngine::~FakeEngine() { shutdown(0); }

void FakeEngine::set_script(Script script) {
  std::lock_guard lock(mutex_);
  script_ = std::move(script);
}

Status FakeEngine::check_request(const EngineRequest& request) const {
  SchedulerConfig limits;
  limits.max_model_len = max_model_len();
  limits.max_seqs = 256;
  limits.kv.n_blocks = 4096;
  limits.kv.block_size = 16;
  return check_engine_request(request, limits, tokenizer_->n_vocab());
}

Result<RequestId> FakeEngine::submit(EngineRequest request, EngineEventCallback on_event) {
  std::lock_guard lock(mutex_);
  if (stopping_) return make_error(ErrorCode::kCancelled, "engine: shutting down");
  if (!script_.refuse.ok()) return script_.refuse;
  const RequestId id = next_id_++;
  last_request_ = request;
  queue_.push_back({id, std::move(request), std::move(on_event)});
  running_.insert(id);
  ++submitted_total_;
  cv_.notify_one();
  return id;
}

void FakeEngine::cancel(RequestId id) {
  std::lock_guard lock(mutex_);
  if (running_.count(id) && cancelled_.insert(id).second) ++cancelled_total_;
}

EngineMetrics FakeEngine::metrics() const {
  std::lock_guard lock(mutex_);
  EngineMetrics m;
  m.num_requests_running = static_cast<int32_t>(running_.size());
  m.kv_blocks_total = 100;
  m.kv_blocks_free = 100 - static_cast<int32_t>(running_.size());
  return m;
}

int FakeEngine::running_count() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(running_.size());
}

EngineRequest FakeEngine::last_request() const {
  std::lock_guard lock(mutex_);
  return last_request_;
}

bool FakeEngine::is_cancelled(RequestId id) const {
  std::lock_guard lock(mutex_);
  return cancelled_.count(id) > 0 || stopping_;
}

void FakeEngine::shutdown(double) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void FakeEngine::loop() {
  for (;;) {
    Job job;
    Script script;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      script = script_;
    }
    run_job(job, script);
    std::lock_guard lock(mutex_);
    running_.erase(job.id);
    cancelled_.erase(job.id);
  }
}

// The samples of one request, one after the other (enough for the server's tests).
void FakeEngine::run_job(Job& job, const Script& script) {
  const auto prompt = static_cast<int32_t>(job.request.prompt.size());
  for (int32_t index = 0; index < job.request.n; ++index) {
    EngineEvent finished;
    finished.kind = EngineEventKind::kFinished;
    finished.request_id = job.id;
    finished.index = index;
    finished.prompt_tokens = prompt;
    finished.finish = FinishReason::kLength;
    int32_t produced = 0;
    for (; produced < job.request.max_tokens; ++produced) {
      if (is_cancelled(job.id)) {
        finished.finish = FinishReason::kAbort;
        break;
      }
      if (script.stop_at >= 0 && produced == script.stop_at && !job.request.ignore_eos) {
        finished.finish = FinishReason::kStop;
        break;
      }
      if (script.per_token.count() > 0) std::this_thread::sleep_for(script.per_token);
      if (script.fail_midway && produced == 1) {
        EngineEvent error;
        error.kind = EngineEventKind::kError;
        error.request_id = job.id;
        error.status = make_error(ErrorCode::kInternal, "engine: scripted failure");
        error.request_done = true;
        job.on_event(error);
        return;
      }
      EngineEvent token;
      token.request_id = job.id;
      token.index = index;
      token.token = 100 + produced % 50;
      token.text = script.texts[static_cast<size_t>(produced) % script.texts.size()];
      if (job.request.sampling.logprobs) {
        token.logprob = -0.5f;
        for (int32_t k = 0; k < job.request.sampling.top_logprobs; ++k) {
          token.top_logprobs.push_back({100 + k, -0.5f - static_cast<float>(k)});
        }
      }
      job.on_event(token);
    }
    finished.completion_tokens = produced;
    finished.request_done = index + 1 == job.request.n;
    job.on_event(finished);
    if (finished.finish == FinishReason::kAbort) {
      for (int32_t rest = index + 1; rest < job.request.n; ++rest) {
        finished.index = rest;
        finished.completion_tokens = 0;
        finished.request_done = rest + 1 == job.request.n;
        job.on_event(finished);
      }
      return;
    }
  }
}

}  // namespace tally_test
