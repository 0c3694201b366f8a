#include "metrics/server_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "base/check.h"
#include "metrics/text_format.h"
#include "metrics/vllm_buckets.h"

namespace tally::metrics {
namespace {

// vLLM labels every metric with the served model and the engine index (data parallelism);
// tally runs one engine per process, so engine is always "0".
constexpr std::string_view kEngineIndex = "0";

std::vector<double> to_vector(std::span<const double> s) { return {s.begin(), s.end()}; }

}  // namespace

Result<std::string> metrics_prefix_from_flag(std::string_view flag) {
  if (flag == "tally") return std::string("tally:");
  if (flag == "vllm") return std::string("vllm:");
  return make_error(ErrorCode::kInvalidArgument, "--metrics-prefix: '{}' is not one of tally, vllm",
                    flag);
}

std::string_view finished_reason_label(FinishReason reason) {
  return reason == FinishReason::kNone ? std::string_view() : finish_reason_name(reason);
}

ServerMetrics::ServerMetrics(ServerMetricsOptions options)
    : registry_(options.prefix), label_values_{options.model_name, std::string(kEngineIndex)} {
  const std::vector<std::string> labels = {"model_name", "engine"};
  register_engine_metrics(labels);
  register_spec_metrics(labels);
  register_offload_metrics(labels);
  register_request_metrics(labels, options.max_model_len);
  register_info_metrics(options);
  registry_.add_collect_hook([this] {
    if (snapshot_source_) set_engine_snapshot(snapshot_source_());
  });
}

// What the engine's snapshot feeds: scheduler state, KV cache, engine counters.
void ServerMetrics::register_engine_metrics(const std::vector<std::string>& labels) {
  running_ = &registry_
                  .add_gauge("num_requests_running",
                             "Number of requests in model execution batches.", labels)
                  .with(label_values_);
  waiting_ =
      &registry_
           .add_gauge("num_requests_waiting", "Number of requests waiting to be processed.", labels)
           .with(label_values_);
  kv_usage_ =
      &registry_
           .add_gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels)
           .with(label_values_);
  // Counted by the scheduler at each admission (zero with --no-prefix-cache).
  prefix_queries_ = &registry_
                         .add_counter("prefix_cache_queries_total",
                                      "Prefix cache queries, in terms of number of queried tokens.",
                                      labels)
                         .with(label_values_);
  prefix_hits_ = &registry_
                      .add_counter("prefix_cache_hits_total",
                                   "Prefix cache hits, in terms of number of cached tokens.", labels)
                      .with(label_values_);
  preemptions_ = &registry_
                      .add_counter("num_preemptions_total",
                                   "Cumulative number of preemption from the engine.", labels)
                      .with(label_values_);
  prompt_tokens_ =
      &registry_.add_counter("prompt_tokens_total", "Number of prefill tokens processed.", labels)
           .with(label_values_);
  generation_tokens_ =
      &registry_
           .add_counter("generation_tokens_total", "Number of generation tokens processed.", labels)
           .with(label_values_);
}

// vLLM's speculative-decoding counters, fed by the engine's snapshot (zero with it off).
void ServerMetrics::register_spec_metrics(const std::vector<std::string>& labels) {
  spec_drafts_ = &registry_
                      .add_counter("spec_decode_num_drafts_total",
                                   "Number of spec decoding drafts.", labels)
                      .with(label_values_);
  spec_draft_tokens_ = &registry_
                            .add_counter("spec_decode_num_draft_tokens_total",
                                         "Number of draft tokens.", labels)
                            .with(label_values_);
  spec_accepted_tokens_ = &registry_
                               .add_counter("spec_decode_num_accepted_tokens_total",
                                            "Number of accepted tokens.", labels)
                               .with(label_values_);
  std::vector<std::string> pos_labels = labels;
  pos_labels.push_back("position");
  spec_accepted_per_pos_family_ = &registry_.add_counter(
      "spec_decode_num_accepted_tokens_per_pos_total",
      "Accepted tokens per draft position.", pos_labels);
}

void ServerMetrics::set_spec_snapshot(const EngineMetrics& snapshot) {
  const SpecDecodeCounters& c = snapshot.spec_decode;
  spec_drafts_->advance_to(static_cast<double>(c.drafts));
  spec_draft_tokens_->advance_to(static_cast<double>(c.draft_tokens));
  spec_accepted_tokens_->advance_to(static_cast<double>(c.accepted_tokens));
  const auto positions = static_cast<size_t>(std::clamp(snapshot.spec_positions, 0, kMaxSpeculativeTokens));
  while (spec_accepted_per_pos_.size() < positions) {
    const std::string pos = std::to_string(spec_accepted_per_pos_.size());
    spec_accepted_per_pos_.push_back(
        &spec_accepted_per_pos_family_->with({label_values_[0], kEngineIndex, pos}));
  }
  for (size_t i = 0; i < spec_accepted_per_pos_.size(); ++i) {
    spec_accepted_per_pos_[i]->advance_to(static_cast<double>(c.accepted_per_pos[i]));
  }
}

// What finished requests and token timings feed.
void ServerMetrics::register_request_metrics(const std::vector<std::string>& labels,
                                             int64_t max_model_len) {
  std::vector<std::string> success_labels = labels;
  success_labels.push_back("finished_reason");
  auto& success = registry_.add_counter(
      "request_success_total", "Count of successfully processed requests.", success_labels);
  // Every reason is present from the start (at 0), as vLLM creates them, so rate() works on
  // the first request.
  const std::string& model = label_values_[0];
  success_stop_ = &success.with({model, kEngineIndex, "stop"});
  success_length_ = &success.with({model, kEngineIndex, "length"});
  success_abort_ = &success.with({model, kEngineIndex, "abort"});
  success_error_ = &success.with({model, kEngineIndex, "error"});

  const std::vector<double> tokens = build_1_2_5_buckets(max_model_len);
  request_prompt_tokens_ =
      &registry_
           .add_histogram("request_prompt_tokens", "Number of prefill tokens processed.", labels,
                          tokens)
           .with(label_values_);
  request_generation_tokens_ =
      &registry_
           .add_histogram("request_generation_tokens", "Number of generation tokens processed.",
                          labels, tokens)
           .with(label_values_);
  ttft_ = &registry_
               .add_histogram("time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", labels,
                              to_vector(vllm_ttft_buckets()))
               .with(label_values_);
  inter_token_ = &registry_
                      .add_histogram("inter_token_latency_seconds",
                                     "Histogram of inter-token latency in seconds.", labels,
                                     to_vector(vllm_inter_token_buckets()))
                      .with(label_values_);
  request_tpot_ = &registry_
                       .add_histogram("request_time_per_output_token_seconds",
                                      "Histogram of time_per_output_token_seconds per request.",
                                      labels, to_vector(vllm_inter_token_buckets()))
                       .with(label_values_);
  const std::vector<double> latency = to_vector(vllm_request_latency_buckets());
  e2e_ = &registry_
              .add_histogram("e2e_request_latency_seconds",
                             "Histogram of e2e request latency in seconds.", labels, latency)
              .with(label_values_);
  queue_ =
      &registry_
           .add_histogram("request_queue_time_seconds",
                          "Histogram of time spent in WAITING phase for request.", labels, latency)
           .with(label_values_);
  inference_ =
      &registry_
           .add_histogram("request_inference_time_seconds",
                          "Histogram of time spent in RUNNING phase for request.", labels, latency)
           .with(label_values_);
  prefill_ =
      &registry_
           .add_histogram("request_prefill_time_seconds",
                          "Histogram of time spent in PREFILL phase for request.", labels, latency)
           .with(label_values_);
  decode_ =
      &registry_
           .add_histogram("request_decode_time_seconds",
                          "Histogram of time spent in DECODE phase for request.", labels, latency)
           .with(label_values_);
}

// tally's own: which build and which model (gauges fixed at 1, labels carry the information).
void ServerMetrics::register_info_metrics(const ServerMetricsOptions& options) {
  registry_.add_gauge("build_info", "tally build: version.", {"version"})
      .with({options.version})
      .set(1);
  std::vector<std::string> names = {"model_name", "engine"};
  std::vector<std::string> values = label_values_;
  for (const auto& [name, value] : options.model_info) {
    names.push_back(name);
    values.push_back(value);
  }
  registry_.add_gauge("model_info", "The served model: name and properties.", names)
      .with(values)
      .set(1);
}

void ServerMetrics::on_finished(const EngineEvent& event) {
  if (event.kind != EngineEventKind::kFinished) return;
  Counter* success = nullptr;
  switch (event.finish) {
    case FinishReason::kStop:
      success = success_stop_;
      break;
    case FinishReason::kLength:
      success = success_length_;
      break;
    case FinishReason::kAbort:
      success = success_abort_;
      break;
    case FinishReason::kNone:
      return;
  }
  success->inc();
  const RequestTiming& t = event.timing;
  e2e_->observe(t.e2e_seconds);
  queue_->observe(t.queue_seconds);
  prefill_->observe(t.prefill_seconds);
  decode_->observe(t.decode_seconds);
  inference_->observe(t.prefill_seconds + t.decode_seconds);
  // A sample aborted before its first token has no time to first token.
  if (event.completion_tokens > 0) ttft_->observe(t.ttft_seconds);
  request_prompt_tokens_->observe(event.prompt_tokens);
  request_generation_tokens_->observe(event.completion_tokens);
  // As vLLM: decode time over the tokens after the first, 0 when there are none.
  const int32_t after_first = event.completion_tokens - 1;
  request_tpot_->observe(after_first > 0 ? t.decode_seconds / after_first : 0.0);
}

void ServerMetrics::on_error() { success_error_->inc(); }

void ServerMetrics::observe_inter_token_latency(double seconds) { inter_token_->observe(seconds); }

void ServerMetrics::set_engine_snapshot(const EngineMetrics& snapshot) {
  running_->set(snapshot.num_requests_running);
  waiting_->set(snapshot.num_requests_waiting);
  kv_usage_->set(snapshot.kv_cache_usage);
  preemptions_->advance_to(static_cast<double>(snapshot.num_preemptions_total));
  prefix_queries_->advance_to(static_cast<double>(snapshot.prefix_cache_queries_total));
  prefix_hits_->advance_to(static_cast<double>(snapshot.prefix_cache_hits_total));
  prompt_tokens_->advance_to(static_cast<double>(snapshot.prompt_tokens_total));
  generation_tokens_->advance_to(static_cast<double>(snapshot.generation_tokens_total));
  set_spec_snapshot(snapshot);
  set_offload_snapshot(snapshot);
}

void ServerMetrics::set_snapshot_source(std::function<EngineMetrics()> source) {
  snapshot_source_ = std::move(source);
}

}  // namespace tally::metrics
