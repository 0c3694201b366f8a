// The metrics `tally serve` exposes at /metrics. Where vLLM has a metric, tally uses vLLM's
// exact name, type, label names and buckets (vLLM 0.12, vllm/v1/metrics/loggers.py), under a
// prefix of "tally:" or "vllm:", so the dashboards, autoscalers and routers built for vLLM
// read tally unchanged. docs/metrics.md lists every metric and where its value comes from.
//
// Sources of values:
//  - engine events, as they happen: on_finished() for each sample's kFinished event (latency
//    histograms, request_success_total), observe_inter_token_latency() between two tokens;
//  - an EngineMetrics snapshot at scrape time: the scheduler gauges and the engine's own
//    counters (tokens, preemptions), through set_snapshot_source() or set_engine_snapshot();
//  - the memory ledger (set_memory_ledger) and /proc/self/status at scrape time
//    (memory_metrics.h).
//
// Thread rules: on_*, observe_* and set_engine_snapshot() are lock-free and may be called from
// any thread, the engine thread's event callback included (no allocation, no lock). render()
// may be called from any thread; it runs the snapshot source first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/engine_types.h"
#include "metrics/memory_metrics.h"
#include "metrics/registry.h"

namespace tally::metrics {

struct ServerMetricsOptions {
  std::string prefix = "tally:";  // "vllm:" for drop-in use; see metrics_prefix_from_flag()
  std::string model_name;         // label model_name on every metric (the served model name)
  int64_t max_model_len = 0;      // per-request token histograms: 1-2-5 buckets up to this
  std::string version;            // build_info{version=...}
  // Extra labels of model_info (e.g. {"architecture", "llama"}); names must be valid label
  // names other than model_name and engine.
  std::vector<std::pair<std::string, std::string>> model_info;
};

// `--metrics-prefix` values: "tally" -> "tally:", "vllm" -> "vllm:"; anything else is
// InvalidArgument.
Result<std::string> metrics_prefix_from_flag(std::string_view flag);

// request_success_total's finished_reason label, as vLLM spells it: "stop", "length", "abort"
// ("" for kNone).
std::string_view finished_reason_label(FinishReason reason);

class ServerMetrics {
 public:
  explicit ServerMetrics(ServerMetricsOptions options);
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // One sample's kFinished event (its timing and usage): request_success_total, the e2e,
  // queue, prefill, decode and inference histograms, TTFT (when it produced a token), the
  // per-request token and time-per-output-token histograms. Other event kinds are ignored,
  // as is a kFinished without a finish reason.
  void on_finished(const EngineEvent& event);
  // A request that ended with a kError event: request_success_total{finished_reason="error"}
  // (vLLM's FinishReason.ERROR).
  void on_error();
  // Seconds from one token of a sample to its next (not the first token: that is TTFT).
  void observe_inter_token_latency(double seconds);

  // Scheduler gauges (running, waiting, KV usage) and the engine's counters (prompt and
  // generation tokens, preemptions; they only ever move up) from a snapshot.
  void set_engine_snapshot(const EngineMetrics& snapshot);
  // Called at every render() for a fresh snapshot, e.g. [&e] { return e.metrics(); }.
  // Set it before serving (not thread-safe against a concurrent render()).
  void set_snapshot_source(std::function<EngineMetrics()> source);

  // The ledger's parts for <prefix>memory_ledger_bytes (memory_metrics.h). Before serving.
  void set_memory_ledger(const MemoryLedger& ledger) { memory_.set_ledger(ledger); }

  // The whole exposition, Content-Type kTextContentType (text_format.h).
  // The prefixed registry first: its collect hook reads /proc for the process_* gauges too.
  std::string render() {
    std::string text = registry_.render();
    return text + process_registry_.render();
  }
  // For the server's own extra metrics (same prefix).
  Registry& registry() { return registry_; }

 private:
  void register_engine_metrics(const std::vector<std::string>& labels);
  void register_request_metrics(const std::vector<std::string>& labels, int64_t max_model_len);
  void register_info_metrics(const ServerMetricsOptions& options);
  void register_spec_metrics(const std::vector<std::string>& labels);
  void set_spec_snapshot(const EngineMetrics& snapshot);
  // offload_metrics.cpp: the KV offload tiers, one child per tier (host, disk).
  void register_offload_metrics(const std::vector<std::string>& labels);
  void set_offload_snapshot(const EngineMetrics& snapshot);

  Registry registry_;
  Registry process_registry_{""};  // process_* metrics keep their standard, unprefixed names
  MemoryMetrics memory_{registry_, process_registry_};
  std::vector<std::string> label_values_;  // {model_name, engine}
  std::function<EngineMetrics()> snapshot_source_;

  // Children, looked up once (registry.h: references stay valid).
  Gauge* running_ = nullptr;
  Gauge* waiting_ = nullptr;
  Gauge* kv_usage_ = nullptr;
  Counter* preemptions_ = nullptr;
  Counter* prefix_queries_ = nullptr;
  Counter* prefix_hits_ = nullptr;
  Counter* prompt_tokens_ = nullptr;
  Counter* generation_tokens_ = nullptr;
  // Speculative decoding (vLLM's spec_decode_* counters); per position, children are made
  // when a snapshot first reports speculation on.
  struct OffloadTierMetrics {
    Counter* hits = nullptr;       // blocks loaded back
    Counter* hit_bytes = nullptr;  // their KV bytes
    Counter* stores = nullptr;     // blocks copied down into the tier
    Gauge* blocks = nullptr;       // blocks held now
    Gauge* bytes = nullptr;        // bytes held now
  };
  OffloadTierMetrics offload_host_;
  OffloadTierMetrics offload_disk_;
  Counter* offload_disk_errors_ = nullptr;
  Counter* offload_skipped_ = nullptr;
  Counter* spec_drafts_ = nullptr;
  Counter* spec_draft_tokens_ = nullptr;
  Counter* spec_accepted_tokens_ = nullptr;
  CounterFamily* spec_accepted_per_pos_family_ = nullptr;
  std::vector<Counter*> spec_accepted_per_pos_;
  Counter* success_stop_ = nullptr;
  Counter* success_length_ = nullptr;
  Counter* success_abort_ = nullptr;
  Counter* success_error_ = nullptr;
  Histogram* ttft_ = nullptr;
  Histogram* inter_token_ = nullptr;
  Histogram* request_tpot_ = nullptr;
  Histogram* e2e_ = nullptr;
  Histogram* queue_ = nullptr;
  Histogram* inference_ = nullptr;
  Histogram* prefill_ = nullptr;
  Histogram* decode_ = nullptr;
  Histogram* request_prompt_tokens_ = nullptr;
  Histogram* request_generation_tokens_ = nullptr;
};

}  // namespace tally::metrics
