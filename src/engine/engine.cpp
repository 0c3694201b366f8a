// Engine::create and the calls other threads make: submit, cancel, shutdown.
#include "engine/engine_impl.h"

namespace tally {

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core, EngineCore::create(config));
  auto engine = std::make_unique<EngineImpl>(std::move(core));
  engine->start();
  return std::unique_ptr<Engine>(std::move(engine));
}

EngineImpl::EngineImpl(std::unique_ptr<EngineCore> core) : core_(std::move(core)) {
  // Each step publishes the scheduler's waiting count before its callbacks: from then on the
  // queue is that count plus the inbox.
  core_->set_on_publish([this](const EngineMetrics& m) {
    std::lock_guard<std::mutex> lock(mu_);
    queued_ = m.num_requests_waiting;
  });
}

EngineImpl::~EngineImpl() { shutdown(0); }

void EngineImpl::start() {
  thread_ = std::thread([this] { loop(); });
}

Result<RequestId> EngineImpl::submit(EngineRequest request, EngineEventCallback on_event) {
  if (!on_event) return make_error(ErrorCode::kInvalidArgument, "submit: no event callback");
  TALLY_RETURN_IF_ERROR(core_->check_request(request));
  Submitted s;
  s.seed = resolve_seed(request.sampling.seed);
  s.request = std::move(request);
  s.on_event = std::move(on_event);
  s.arrival = EngineClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return make_error(ErrorCode::kCancelled, "the engine is shutting down");
  const int64_t queued = queued_ + static_cast<int64_t>(inbox_.size());
  if (queued >= core_->config().max_waiting) {
    return make_error(ErrorCode::kResourceExhausted,
                      "{} requests are already queued (max_waiting): try later", queued);
  }
  s.id = next_id_++;
  inbox_.push_back(std::move(s));
  idle_ = false;
  work_cv_.notify_one();
  return inbox_.back().id;
}

void EngineImpl::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  cancels_.push_back(id);
  work_cv_.notify_one();
}

void EngineImpl::shutdown(double timeout_seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  if (timeout_seconds > 0) {
    idle_cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                      [this] { return idle_; });
  }
  abort_all_ = true;
  stop_ = true;
  work_cv_.notify_one();
  lock.unlock();
  if (thread_.get_id() == std::this_thread::get_id()) return;  // from a callback: no join
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

}  // namespace tally
