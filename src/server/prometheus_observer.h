// The ServerObserver behind `tally serve`'s /metrics: tally::metrics::ServerMetrics (vLLM's
// metric names) fed with engine events and an engine snapshot at scrape time, plus the KV
// pool in blocks (kv_cache_free_blocks, kv_cache_total_blocks), so a freed request is
// visible as blocks coming back.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/engine.h"
#include "metrics/server_metrics.h"
#include "server/server_observer.h"

namespace tally::server {

class PrometheusObserver final : public ServerObserver {
 public:
  // `engine` must outlive the observer.
  PrometheusObserver(metrics::ServerMetricsOptions options, Engine& engine);

  void on_engine_event(const EngineEvent& event) override;
  std::string render_metrics() override { return metrics_.render(); }

  metrics::ServerMetrics& metrics() { return metrics_; }

 private:
  using Clock = std::chrono::steady_clock;

  metrics::ServerMetrics metrics_;
  // Time of each running sample's last token, for inter-token latency. Touched only by
  // on_engine_event, i.e. on the engine thread.
  std::unordered_map<uint64_t, Clock::time_point> last_token_;
};

}  // namespace tally::server
