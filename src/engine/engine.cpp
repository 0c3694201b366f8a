// Engine::create and the calls other threads make: submit, cancel, metrics, shutdown.
#include <algorithm>

#include "base/log.h"
#include "engine/engine_impl.h"
#include "engine/ledger_text.h"
#include "plan/gguf_source.h"

namespace tally {

namespace {

SchedulerConfig scheduler_config(const EngineConfig& c, const EngineSizing& s) {
  SchedulerConfig sc;
  sc.policy = c.static_batching ? SchedulePolicy::kStatic : SchedulePolicy::kContinuous;
  sc.max_batched_tokens = c.max_batched_tokens;
  sc.max_seqs = c.max_seqs;
  sc.max_model_len = s.max_model_len;
  sc.max_waiting = c.max_waiting;
  sc.kv.n_blocks = s.n_blocks;
  sc.kv.block_size = c.block_size;
  return sc;
}

BatchRunnerConfig runner_config(const EngineConfig& c, const EngineSizing& s) {
  BatchRunnerConfig rc;
  rc.n_blocks = s.n_blocks;
  rc.block_size = c.block_size;
  rc.kv_type = c.kv_type;
  rc.max_tokens = c.max_batched_tokens;
  rc.max_rows = c.max_seqs;
  return rc;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(config.model_path));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model->gguf()));
  TALLY_ASSIGN_OR_RETURN(plan::PlanModel plan_model, plan::plan_model_from_gguf(model->gguf()));
  TALLY_ASSIGN_OR_RETURN(EngineSizing sizing, engine_sizing(config, model->config(), plan_model));
  TALLY_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::create(scheduler_config(config, sizing)));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<BatchRunner> runner,
                         BatchRunner::create(*model, runner_config(config, sizing)));
  auto engine = std::make_unique<EngineImpl>(config, std::move(model), std::move(tokenizer), sizing,
                                             std::move(scheduler), std::move(runner));
  engine->start();
  return std::unique_ptr<Engine>(std::move(engine));
}

EngineImpl::EngineImpl(const EngineConfig& config, std::unique_ptr<Model> model,
                       std::unique_ptr<Tokenizer> tokenizer, const EngineSizing& sizing,
                       Scheduler scheduler, std::unique_ptr<BatchRunner> runner)
    : config_(config),
      model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      sched_config_(scheduler.config()),
      n_vocab_(static_cast<int32_t>(model_->config().n_vocab)),
      sched_(std::move(scheduler)),
      runner_(std::move(runner)),
      pool_(config.threads) {
  // A sampled BOS starts a new document: it ends the sample, as in `tally generate`.
  for (int32_t id = 0; id < tokenizer_->n_vocab(); ++id) {
    if (tokenizer_->is_eog(id) || id == tokenizer_->bos()) stop_tokens_.push_back(id);
  }
  build_ledger(sizing);
  log_ledger();
  const auto rows = static_cast<size_t>(config.max_seqs);
  sampled_.reserve(rows);
  sched_events_.reserve(rows);
  outbox_.reserve(2 * rows);
  metrics_.kv_blocks_total = sched_.kv().n_blocks();
  metrics_.kv_blocks_free = sched_.kv().n_free_blocks();
}

EngineImpl::~EngineImpl() { shutdown(0); }

void EngineImpl::start() {
  thread_ = std::thread([this] { loop(); });
}

void EngineImpl::build_ledger(const EngineSizing& sizing) {
  const BatchRunnerBytes b = runner_->bytes();
  ledger_.weight_bytes_mapped = model_->weights().mapped_bytes;
  ledger_.weight_bytes_owned = model_->weights().owned_bytes;
  ledger_.activation_bytes = b.activations();
  ledger_.kv_bytes = b.kv;
  ledger_.kv_blocks = sizing.n_blocks;
  ledger_.block_size = config_.block_size;
  ledger_.token_capacity = ledger_.kv_blocks * ledger_.block_size;
  ledger_.kv_bytes_per_token = runner_->kv().shape().bytes_per_token();
  // The block pool's bookkeeping: a reference count, a hash and two free-list links a block.
  ledger_.other_bytes = int64_t{sizing.n_blocks} * (4 + 8 + 4 + 4);
}

void EngineImpl::log_ledger() const {
  // The same text `tally serve` prints and bench throughput reports (ledger_text.h), plus the
  // settings it was sized for.
  std::string text = format_ledger(ledger_);
  text.pop_back();  // spdlog ends the line
  spdlog::info("engine: memory ledger (batch of {} tokens, {} sequences, KV {}, context {}, {} "
               "scheduling)\n{}",
               config_.max_batched_tokens, config_.max_seqs, dtype_name(config_.kv_type),
               sched_config_.max_model_len, config_.static_batching ? "static" : "continuous",
               text);
}

Status EngineImpl::check_request(const EngineRequest& r) const {
  if (r.prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "the prompt has no tokens");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= n_vocab_) {
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt token {} is {}, outside the vocabulary [0, {})", i, r.prompt[i],
                        n_vocab_);
    }
  }
  if (static_cast<int64_t>(r.prompt.size()) >= sched_config_.max_model_len) {
    return make_error(ErrorCode::kOutOfRange,
                      "the prompt has {} tokens and the context holds {}: the prompt must be "
                      "shorter than the context to leave room for output",
                      r.prompt.size(), sched_config_.max_model_len);
  }
  if (r.max_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "max_tokens is {} (must be >= 1)", r.max_tokens);
  }
  if (r.min_tokens < 0) {
    return make_error(ErrorCode::kInvalidArgument, "min_tokens is {} (must be >= 0)", r.min_tokens);
  }
  if (r.n < 1 || r.n > config_.max_seqs) {
    return make_error(ErrorCode::kInvalidArgument, "n is {} (must be in [1, {}])", r.n,
                      config_.max_seqs);
  }
  TALLY_RETURN_IF_ERROR(r.sampling.validate(n_vocab_));
  return StopMatcher::validate(r.stop);
}

Result<RequestId> EngineImpl::submit(EngineRequest request, EngineEventCallback on_event) {
  if (!on_event) return make_error(ErrorCode::kInvalidArgument, "submit: no event callback");
  TALLY_RETURN_IF_ERROR(check_request(request));
  Submitted s;
  s.spec.prompt = request.prompt;
  s.spec.max_tokens = request.max_tokens;
  s.spec.n = request.n;
  s.spec.priority = request.priority;
  if (!request.ignore_eos) s.spec.stop_token_ids = stop_tokens_;
  if (Status st = Scheduler::check_request(sched_config_, s.spec); !st.ok()) {
    // The id is not assigned yet: drop the scheduler's "request 0: " prefix.
    std::string msg = st.message();
    if (const size_t colon = msg.find(": ");
        msg.rfind("request ", 0) == 0 && colon != std::string::npos) {
      msg.erase(0, colon + 2);
    }
    return Status(st.code(), std::move(msg));
  }
  s.seed = resolve_seed(request.sampling.seed);
  s.request = std::move(request);
  s.on_event = std::move(on_event);
  s.arrival = EngineClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return make_error(ErrorCode::kCancelled, "the engine is shutting down");
  if (queued_ + static_cast<int64_t>(inbox_.size()) >= config_.max_waiting) {
    return make_error(ErrorCode::kResourceExhausted,
                      "{} requests are already queued (max_waiting): try later",
                      queued_ + static_cast<int64_t>(inbox_.size()));
  }
  s.id = next_id_++;
  s.spec.id = s.id;
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

EngineMetrics EngineImpl::metrics() const {
  std::lock_guard<std::mutex> lock(metrics_mu_);
  return metrics_;
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
