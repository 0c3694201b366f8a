#include "engine/engine_offload.h"

#include "engine/engine_core.h"

#include <xxhash.h>

#include "base/log.h"
#include "base/mapped_file.h"
#include "tensor/kv_types.h"

namespace tally {

Result<PrefixKey> kv_offload_fingerprint(const std::string& model_path,
                                         const KvStorageShape& shape) {
  // The mapped bytes, through a map of its own rather than the model's: hashing through the
  // model's map would fault the pages of the weights it repacked (and released) back into this
  // process. This one shares the page cache, copies nothing, and takes its pages with it when
  // it is unmapped on return.
  auto file = MappedFile::open(model_path);
  if (!file.ok()) {
    return make_error(ErrorCode::kIo, "kv offload: cannot map {} for its fingerprint: {}",
                      model_path, file.status().to_string());
  }
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                  &XXH3_freeState);
  XXH3_128bits_reset(state.get());
  XXH3_128bits_update(state.get(), file->data(), file->size());
  const int64_t layout[] = {static_cast<int64_t>(file->size()), shape.n_layers, shape.n_kv_heads,
                            shape.head_dim, shape.block_size,
                            static_cast<int64_t>(shape.types.k), static_cast<int64_t>(shape.types.v),
                            // the bytes of a slot: caches of an older row layout (q8_0 / q4_0
                            // heads under 32 values shared a block before) never match
                            kv_row_bytes(shape.types.k, shape.n_kv_heads, shape.head_dim),
                            kv_row_bytes(shape.types.v, shape.n_kv_heads, shape.head_dim)};
  XXH3_128bits_update(state.get(), layout, sizeof layout);
  const XXH128_hash_t h = XXH3_128bits_digest(state.get());
  return PrefixKey{h.low64, h.high64};
}

Result<std::unique_ptr<KvOffload>> engine_make_offload(const EngineConfig& config,
                                                       const KvStorageShape& shape,
                                                       KvBlockIo& io) {
  if (config.kv_offload_memory == 0 && config.kv_offload_dir.empty()) {
    return std::unique_ptr<KvOffload>();
  }
  KvOffloadConfig oc;
  oc.host_bytes = config.kv_offload_memory;
  oc.disk_dir = config.kv_offload_dir;
  oc.disk_bytes = config.kv_offload_disk;
  oc.block_size = config.block_size;
  if (!oc.disk_dir.empty()) {
    TALLY_ASSIGN_OR_RETURN(oc.fingerprint, kv_offload_fingerprint(config.model_path, shape));
  }
  return KvOffload::create(oc, io);
}

Status EngineCore::attach_offload() {
  offload_io_ = std::make_unique<KvStorageBlockIo>(runner_->kv_storage());
  TALLY_ASSIGN_OR_RETURN(offload_, engine_make_offload(config_, runner_->kv().shape(), *offload_io_));
  if (!offload_) {
    offload_io_.reset();
    return Status::ok_status();
  }
  sched_.set_kv_offload(offload_.get());
  spdlog::info("engine: KV offload tiers: host {} blocks{}{}", ledger_.kv_offload_bytes /
               KvOffload::host_entry_bytes(offload_->block_bytes(), config_.block_size),
               offload_->has_disk() ? ", disk in " : "", config_.kv_offload_dir);
  publish_metrics();
  return Status::ok_status();
}

void EngineCore::note_forward_rate(double seconds) {
  if (!offload_) return;
  int64_t tokens = 0;
  for (const ScheduledSeq& row : out_.scheduled) tokens += row.n_tokens;
  // Decode steps say little about prefill: only steps that computed a block's worth count.
  if (tokens >= config_.block_size) offload_->note_recompute(tokens, seconds);
}

}  // namespace tally
