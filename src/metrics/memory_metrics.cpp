#include "metrics/memory_metrics.h"

#include "metrics/process_memory.h"

namespace tally::metrics {

MemoryMetrics::MemoryMetrics(Registry& prefixed, Registry& process) {
  ledger_ = &prefixed.add_gauge(
      "memory_ledger_bytes",
      "The engine's memory ledger by part: weights_mapped, weights_owned, buffers, kv_cache, "
      "other (their sum is the ledger's total).",
      {"part"});
  kv_token_bytes_ = &prefixed.add_gauge(
      "kv_cache_token_bytes",
      "Bytes one token takes in the KV cache (K and V, all layers), labelled with the storage "
      "types of K and V (f32, f16, bf16, q8_0, q4_0).",
      {"k_type", "v_type"});
  resident_ =
      &process.add_gauge("process_resident_memory_bytes", "Resident memory size in bytes.").with({});
  virtual_ =
      &process.add_gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.").with({});
  peak_resident_ = &prefixed
                        .add_gauge("process_resident_memory_peak_bytes",
                                   "The most resident memory the process has held (VmHWM).")
                        .with({});
  peak_virtual_ = &prefixed
                       .add_gauge("process_virtual_memory_peak_bytes",
                                  "The largest virtual memory size of the process (VmPeak).")
                       .with({});
  auto& kind = prefixed.add_gauge(
      "process_resident_memory_kind_bytes",
      "Resident memory by kind: anon (heap, KV cache, repacked weights), file (mapped files: "
      "the binary, weights used in place), shmem.",
      {"kind"});
  anon_ = &kind.with({"anon"});
  file_ = &kind.with({"file"});
  shmem_ = &kind.with({"shmem"});
  // On the prefixed registry: ServerMetrics renders it first, so both see this scrape's values.
  prefixed.add_collect_hook([this] { collect(); });
}

void MemoryMetrics::set_ledger(const MemoryLedger& l) {
  ledger_->with({"weights_mapped"}).set(static_cast<double>(l.weight_bytes_mapped));
  ledger_->with({"weights_owned"}).set(static_cast<double>(l.weight_bytes_owned));
  ledger_->with({"buffers"}).set(static_cast<double>(l.activation_bytes));
  ledger_->with({"kv_cache"}).set(static_cast<double>(l.kv_bytes));
  ledger_->with({"other"}).set(static_cast<double>(l.other_bytes));
  kv_token_bytes_->with({dtype_name(l.kv_type.k), dtype_name(l.kv_type.v)})
      .set(static_cast<double>(l.kv_bytes_per_token));
}

void MemoryMetrics::collect() {
  auto m = read_process_memory();
  if (!m.ok()) return;  // no /proc: the gauges keep their last values
  resident_->set(static_cast<double>(m->resident_bytes));
  virtual_->set(static_cast<double>(m->virtual_bytes));
  peak_resident_->set(static_cast<double>(m->peak_resident_bytes));
  peak_virtual_->set(static_cast<double>(m->peak_virtual_bytes));
  anon_->set(static_cast<double>(m->resident_anon_bytes));
  file_->set(static_cast<double>(m->resident_file_bytes));
  shmem_->set(static_cast<double>(m->resident_shmem_bytes));
}

}  // namespace tally::metrics
