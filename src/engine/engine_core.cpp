// EngineCore's construction, its ledger, requests in and out, and its counters.
#include "engine/engine_core.h"

#include <algorithm>
#include <optional>

#include "base/check.h"
#include "base/log.h"
#include "engine/ledger_text.h"
#include "engine/request_check.h"
#include "kv/block_pool.h"
#include "kv/prefix_cache.h"
#include "plan/gguf_source.h"

namespace tally {

namespace {

SchedulerConfig scheduler_config(const EngineConfig& c, const EngineSizing& s, const ModelConfig& model) {
  SchedulerConfig sc;
  sc.policy = c.static_batching ? SchedulePolicy::kStatic : SchedulePolicy::kContinuous;
  sc.max_batched_tokens = c.max_batched_tokens;
  sc.max_seqs = c.max_seqs;
  sc.max_model_len = s.max_model_len;
  sc.max_waiting = c.max_waiting;
  sc.kv.n_blocks = s.n_blocks;
  sc.kv.block_size = c.block_size;
  sc.kv.enable_prefix_cache = c.prefix_cache;
  // Every layer windowed: blocks behind the window are never read again. Not with a draft
  // model, which reads the same block tables over its own layers (maybe unwindowed).
  if (!c.keep_out_of_window_kv && !c.spec.has_draft_model())
    sc.kv.sliding_window = static_cast<int32_t>(model.full_window());
  sc.swap_preemption = c.swap_preemption;
  sc.spec = c.spec;
  return sc;
}

BatchRunnerConfig runner_config(const EngineConfig& c, const EngineSizing& s) {
  BatchRunnerConfig rc;
  rc.n_blocks = s.n_blocks;
  rc.block_size = c.block_size;
  rc.kv_type = c.kv_type;
  // The plan's step: a step never holds more tokens than the resident sequences have.
  rc.max_tokens = s.plan.step_tokens;
  rc.max_rows = std::min<int64_t>(s.plan.step_tokens, c.max_seqs);
  rc.max_seqs = c.max_seqs;
  rc.max_seq_len = s.max_model_len;
  rc.max_draft = c.spec.draft_positions();
  return rc;
}

// The draft model computes every position the target does, in the target's blocks.
DraftRunnerConfig draft_config(const EngineConfig& c, const EngineSizing& s) {
  const BatchRunnerConfig rc = runner_config(c, s);
  DraftRunnerConfig dc;
  dc.n_blocks = rc.n_blocks;
  dc.block_size = rc.block_size;
  dc.kv_type = rc.kv_type;
  dc.max_tokens = rc.max_tokens;
  dc.max_rows = rc.max_rows;
  dc.max_model_len = rc.max_seq_len;
  dc.max_draft = rc.max_draft;
  return dc;
}

}  // namespace

Result<std::unique_ptr<EngineCore>> EngineCore::create(const EngineConfig& config) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(config.model_path));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model->gguf()));
  return create(config, std::move(model), std::move(tokenizer));
}

Result<std::unique_ptr<EngineCore>> EngineCore::create(const EngineConfig& config,
                                                       std::unique_ptr<Model> model,
                                                       std::unique_ptr<Tokenizer> tokenizer) {
  // Every token id must have a logit (and an embedding row): a stop token or a special token
  // past the model's rows would be read or written beyond the logits.
  if (tokenizer->n_vocab() > model->config().n_vocab) {
    return make_error(ErrorCode::kFormat,
                      "{}: the tokenizer has {} tokens but the model has {} embedding/output "
                      "rows (token_embd.weight); token ids {}.. would have no logits",
                      config.model_path, tokenizer->n_vocab(), model->config().n_vocab,
                      model->config().n_vocab);
  }
  TALLY_ASSIGN_OR_RETURN(plan::PlanModel plan_model, plan::plan_model_from_gguf(model->gguf()));
  const bool with_draft = config.spec.has_draft_model() && !config.static_batching;
  std::optional<plan::PlanModel> draft_plan_model;
  if (with_draft) {
    auto d = plan::plan_model_from_gguf_path(config.spec.draft_model_path);
    if (!d.ok()) return d.status().with_context("--draft-model");
    draft_plan_model = std::move(*d);
  }
  TALLY_ASSIGN_OR_RETURN(EngineSizing sizing,
                         engine_sizing(config, model->config(), plan_model,
                                       draft_plan_model ? &*draft_plan_model : nullptr));
  model->use_context_length(sizing.max_model_len);  // LongRoPE's factor set
  TALLY_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::create(scheduler_config(config, sizing, model->config())));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<BatchRunner> runner,
                         BatchRunner::create(*model, runner_config(config, sizing)));
  std::unique_ptr<DraftModelRunner> drafter;
  if (with_draft) {
    TALLY_ASSIGN_OR_RETURN(drafter, DraftModelRunner::create(config.spec.draft_model_path,
                                                             *tokenizer, model->config(),
                                                             draft_config(config, sizing)));
  }
  auto core = std::make_unique<EngineCore>(config, std::move(model), std::move(tokenizer), sizing,
                                           std::move(scheduler), std::move(runner),
                                           std::move(drafter));
  TALLY_RETURN_IF_ERROR(core->attach_offload());
  return core;
}

EngineCore::EngineCore(const EngineConfig& config, std::unique_ptr<Model> model,
                       std::unique_ptr<Tokenizer> tokenizer, const EngineSizing& sizing,
                       Scheduler scheduler, std::unique_ptr<BatchRunner> runner,
                       std::unique_ptr<DraftModelRunner> drafter)
    : config_(config),
      model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      sched_config_(scheduler.config()),
      n_vocab_(static_cast<int32_t>(model_->config().n_vocab)),
      sched_(std::move(scheduler)),
      runner_(std::move(runner)),
      drafter_(std::move(drafter)),
      pool_(config.threads) {
  // A sampled BOS starts a new document: it ends the sample, as llama2.c's run.c does.
  for (int32_t id = 0; id < tokenizer_->n_vocab(); ++id) {
    if (tokenizer_->is_eog(id) || id == tokenizer_->bos()) stop_tokens_.push_back(id);
  }
  build_ledger(sizing);
  log_ledger();
  const auto rows = static_cast<size_t>(config.max_seqs);
  emitted_.reserve(rows * static_cast<size_t>(1 + runner_->max_draft()));
  n_emitted_.reserve(rows);
  history_.reserve(static_cast<size_t>(sched_config_.max_model_len));
  finishes_.reserve(rows);
  sched_events_.reserve(rows);
  outbox_.reserve(2 * rows);
  publish_metrics();
}

void EngineCore::build_ledger(const EngineSizing& sizing) {
  const BatchRunnerBytes b = runner_->bytes();
  ledger_.weight_bytes_mapped = model_->weights().mapped_bytes;
  ledger_.weight_bytes_owned = model_->weights().owned_bytes;
  ledger_.activation_bytes = b.buffers;
  TALLY_CHECK(b.buffers == sizing.plan.activation_bytes,
              "engine: buffers of {} B, but the plan's activations are {} B", b.buffers,
              sizing.plan.activation_bytes);
  ledger_.kv_bytes = b.kv;
  ledger_.kv_blocks = sizing.n_blocks;
  ledger_.block_size = config_.block_size;
  ledger_.token_capacity = ledger_.kv_blocks * ledger_.block_size;
  ledger_.kv_bytes_per_token = runner_->kv().shape().bytes_per_token();
  ledger_.kv_type = runner_->kv().types();
  // The block pool's bookkeeping and, with the prefix cache, its index: each kv/ class says
  // what its per-block arrays take.
  ledger_.other_bytes = BlockPool::bytes_for(sizing.n_blocks);
  if (sched_config_.kv.enable_prefix_cache)
    ledger_.other_bytes += PrefixCache::bytes_for(sizing.n_blocks, config_.block_size);
  if (drafter_) {
    const DraftRunnerBytes d = drafter_->bytes();
    ledger_.draft_weight_bytes = d.weights;
    ledger_.draft_kv_bytes = d.kv;
    ledger_.draft_buffer_bytes = d.buffers;
    // `tally plan --draft-model` prints the same: the budget paid for them.
    TALLY_CHECK(sizing.plan.draft && d.buffers == sizing.plan.draft->activation_bytes &&
                    d.kv == sizing.n_blocks * config_.block_size * sizing.plan.draft->kv_bytes_per_token,
                "engine: the draft model's buffers ({} B) and KV ({} B) are not the plan's",
                d.buffers, d.kv);
  }
  const int64_t block_bytes = runner_->kv().shape().bytes_per_block();
  ledger_.kv_offload_bytes =
      KvOffload::host_blocks_for(config_.kv_offload_memory, block_bytes, config_.block_size) *
      KvOffload::host_entry_bytes(block_bytes, config_.block_size);
  TALLY_CHECK(ledger_.kv_offload_bytes == sizing.plan.kv_offload_bytes,
              "engine: a host offload tier of {} B, but the plan's is {} B",
              ledger_.kv_offload_bytes, sizing.plan.kv_offload_bytes);
}

void EngineCore::log_ledger() const {
  // The same text `tally serve` prints and bench throughput reports (ledger_text.h), plus the
  // settings it was sized for.
  std::string text = format_ledger(ledger_);
  text.pop_back();  // spdlog ends the line
  spdlog::info("engine: memory ledger (batch of {} tokens, {} sequences, KV {}, context {}, {} "
               "scheduling)\n{}",
               config_.max_batched_tokens, config_.max_seqs, kv_types_name(config_.kv_type),
               sched_config_.max_model_len, config_.static_batching ? "static" : "continuous",
               text);
}

Status EngineCore::check_request(const EngineRequest& r) const {
  return check_engine_request(r, sched_config_, n_vocab_);
}

void EngineCore::add_request(RequestId id, EngineRequest request, uint64_t seed,
                             EngineEventCallback on_event, EngineClock::time_point arrival) {
  auto state = std::make_unique<RequestState>(RequestState::make(
      id, request, seed, std::move(on_event), *tokenizer_, n_vocab_, arrival));
  RequestState& r = *state;
  requests_.emplace(id, std::move(state));
  // The request's scheduler part goes on as it is: the same RequestSpec the caller filled.
  request.id = id;
  if (Status st = sched_.add_request(std::move(static_cast<RequestSpec&>(request))); !st.ok()) {
    fail_request(r, st);  // check_request() passed: only a full queue gets here
  }
  deliver();
  forget_done();
}

void EngineCore::abort_request(RequestId id) { (void)sched_.abort_request(id); }

void EngineCore::abort_all() {
  for (auto& [id, r] : requests_) (void)sched_.abort_request(id);
}

EngineMetrics EngineCore::metrics() const {
  std::lock_guard<std::mutex> lock(metrics_mu_);
  return metrics_;
}

void EngineCore::publish_metrics() {
  const SchedulerStats st = sched_.stats();
  EngineMetrics m;
  m.num_requests_running = st.n_running;
  m.num_requests_waiting = st.n_waiting;
  m.kv_cache_usage = st.kv_usage;
  m.num_preemptions_total = st.preemptions_total;
  m.prompt_tokens_total = prompt_tokens_total_;
  m.generation_tokens_total = generation_tokens_total_;
  m.steps_total = st.steps;
  m.kv_blocks_total = sched_.kv().n_blocks();
  m.kv_blocks_free = st.kv_free_blocks;
  m.kv_utilization = st.kv_utilization();
  m.prefix_cache_queries_total = st.prefix_cache_queries;
  m.prefix_cache_hits_total = st.prefix_cache_hits;
  if (offload_) m.kv_offload = offload_->stats();
  m.spec_positions = config_.static_batching ? 0 : sched_config_.spec.draft_positions();
  m.spec_decode = spec_;
  {
    std::lock_guard<std::mutex> lock(metrics_mu_);
    metrics_ = m;
  }
  if (on_publish_) on_publish_(m);
}

}  // namespace tally
