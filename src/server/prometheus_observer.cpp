#include "server/prometheus_observer.h"

namespace tally::server {

namespace {

uint64_t sample_key(const EngineEvent& event) {
  return (static_cast<uint64_t>(event.request_id) << 16) ^ static_cast<uint64_t>(event.index);
}

}  // namespace

PrometheusObserver::PrometheusObserver(metrics::ServerMetricsOptions options, Engine& engine)
    : metrics_(std::move(options)) {
  metrics_.set_memory_ledger(engine.ledger());
  auto& registry = metrics_.registry();
  metrics::Gauge& free_blocks =
      registry.add_gauge("kv_cache_free_blocks", "KV-cache blocks not held by any request.")
          .with({});
  metrics::Gauge& total_blocks =
      registry.add_gauge("kv_cache_total_blocks", "KV-cache blocks in the pool.").with({});
  // One engine snapshot per scrape feeds both ServerMetrics and the block gauges.
  metrics_.set_snapshot_source([&engine, &free_blocks, &total_blocks] {
    EngineMetrics snapshot = engine.metrics();
    free_blocks.set(snapshot.kv_blocks_free);
    total_blocks.set(snapshot.kv_blocks_total);
    return snapshot;
  });
}

void PrometheusObserver::on_engine_event(const EngineEvent& event) {
  const auto now = Clock::now();
  switch (event.kind) {
    case EngineEventKind::kToken: {
      auto [it, first] = last_token_.try_emplace(sample_key(event), now);
      if (!first) {
        metrics_.observe_inter_token_latency(
            std::chrono::duration<double>(now - it->second).count());
        it->second = now;
      }
      break;
    }
    case EngineEventKind::kFinished:
      last_token_.erase(sample_key(event));
      metrics_.on_finished(event);
      break;
    case EngineEventKind::kError:
      metrics_.on_error();
      break;
  }
}

}  // namespace tally::server
