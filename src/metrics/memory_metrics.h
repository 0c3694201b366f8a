// Prediction and reality side by side on /metrics: the engine's memory ledger by part
// (<prefix>memory_ledger_bytes{part=...}, and the KV cache's bytes per token with its storage
// types, <prefix>kv_cache_token_bytes{k_type=...,v_type=...}: set once at start-up) and the process's memory as the
// kernel counts it (process_metrics.h), read at every scrape:
//   process_resident_memory_bytes, process_virtual_memory_bytes (unprefixed, the names every
//   Prometheus client library's process collector uses, so stock dashboards find them);
//   <prefix>process_resident_memory_peak_bytes (VmHWM), <prefix>process_virtual_memory_peak_bytes,
//   <prefix>process_resident_memory_kind_bytes{kind="anon"|"file"|"shmem"}.
// docs/memory.md says what counts where.
//
// Thread rules: set_ledger() before serving. The process gauges are refreshed by a collect
// hook of `prefixed`, which must therefore render before `process` (ServerMetrics::render).
#pragma once

#include "engine/engine_types.h"
#include "metrics/registry.h"

namespace tally::metrics {

class MemoryMetrics {
 public:
  // `prefixed` takes the tally-specific families, `process` (a registry without a prefix) the
  // process_* families. Both must outlive this object.
  MemoryMetrics(Registry& prefixed, Registry& process);
  MemoryMetrics(const MemoryMetrics&) = delete;
  MemoryMetrics& operator=(const MemoryMetrics&) = delete;

  void set_ledger(const MemoryLedger& ledger);

 private:
  void collect();

  GaugeFamily* ledger_ = nullptr;
  GaugeFamily* kv_token_bytes_ = nullptr;
  Gauge* resident_ = nullptr;
  Gauge* virtual_ = nullptr;
  Gauge* peak_resident_ = nullptr;
  Gauge* peak_virtual_ = nullptr;
  Gauge* anon_ = nullptr;
  Gauge* file_ = nullptr;
  Gauge* shmem_ = nullptr;
};

}  // namespace tally::metrics
