// The KV offload tiers' metrics (docs/prefix_cache.md): per tier, a `tier` label of "host"
// or "disk", fed by the engine's snapshot (all zero without tiers).
#include "metrics/server_metrics.h"

namespace tally::metrics {

void ServerMetrics::register_offload_metrics(const std::vector<std::string>& labels) {
  std::vector<std::string> tier_labels = labels;
  tier_labels.push_back("tier");
  auto& hits = registry_.add_counter("kv_offload_hits_total",
                                     "KV blocks copied back into the pool from an offload tier.",
                                     tier_labels);
  auto& hit_bytes = registry_.add_counter(
      "kv_offload_hit_bytes_total", "KV bytes copied back into the pool from an offload tier.",
      tier_labels);
  auto& stores = registry_.add_counter(
      "kv_offload_stores_total", "KV blocks copied down into an offload tier.", tier_labels);
  auto& blocks = registry_.add_gauge("kv_offload_blocks", "KV blocks an offload tier holds.",
                                     tier_labels);
  auto& bytes = registry_.add_gauge("kv_offload_bytes", "Bytes an offload tier holds.",
                                    tier_labels);
  for (auto [tier, m] : {std::pair{"host", &offload_host_}, std::pair{"disk", &offload_disk_}}) {
    const std::vector<std::string> values = {label_values_[0], label_values_[1], tier};
    m->hits = &hits.with(values);
    m->hit_bytes = &hit_bytes.with(values);
    m->stores = &stores.with(values);
    m->blocks = &blocks.with(values);
    m->bytes = &bytes.with(values);
  }
  offload_disk_errors_ =
      &registry_
           .add_counter("kv_offload_disk_errors_total",
                        "Disk tier block files found missing, truncated or corrupt, or not "
                        "written (each a miss).",
                        labels)
           .with(label_values_);
  offload_skipped_ =
      &registry_
           .add_counter("kv_offload_recomputed_blocks_total",
                        "Offload tier hits computed instead, as that was estimated faster.",
                        labels)
           .with(label_values_);
}

void ServerMetrics::set_offload_snapshot(const EngineMetrics& snapshot) {
  const KvOffloadStats& s = snapshot.kv_offload;
  auto set = [](OffloadTierMetrics& m, int64_t hits, int64_t hit_bytes, int64_t stores,
                int64_t blocks, int64_t bytes) {
    m.hits->advance_to(static_cast<double>(hits));
    m.hit_bytes->advance_to(static_cast<double>(hit_bytes));
    m.stores->advance_to(static_cast<double>(stores));
    m.blocks->set(static_cast<double>(blocks));
    m.bytes->set(static_cast<double>(bytes));
  };
  set(offload_host_, s.host_hits, s.host_hit_bytes, s.host_stores, s.host_blocks, s.host_bytes);
  set(offload_disk_, s.disk_hits, s.disk_hit_bytes, s.disk_stores, s.disk_blocks, s.disk_bytes);
  offload_disk_errors_->advance_to(static_cast<double>(s.disk_errors));
  offload_skipped_->advance_to(static_cast<double>(s.skipped_loads));
}

}  // namespace tally::metrics
