#include "kv/kv_offload.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"

namespace tally {

namespace {

double kv_offload_seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

double kv_offload_ema(double average, double sample) {
  // A quarter weight: a few loads settle it, one slow outlier does not flip decisions.
  return average == 0 ? sample : 0.75 * average + 0.25 * sample;
}

int64_t KvOffload::host_blocks_for(int64_t host_bytes, int64_t block_bytes, int32_t block_size) {
  if (host_bytes <= 0 || block_bytes <= 0) return 0;
  return host_bytes / host_entry_bytes(block_bytes, block_size);
}

KvOffload::KvOffload(const KvOffloadConfig& config, KvBlockIo& io)
    : config_(config),
      io_(io),
      block_bytes_(io.block_bytes()),
      max_host_bytes_(host_blocks_for(config.host_bytes, io.block_bytes(), config.block_size) *
                      host_entry_bytes(io.block_bytes(), config.block_size)) {
  scratch_.resize(static_cast<size_t>(block_bytes_));
  host_index_.reserve(static_cast<size_t>(max_host_bytes_ / std::max<int64_t>(1, block_bytes_)));
}

Result<std::unique_ptr<KvOffload>> KvOffload::create(const KvOffloadConfig& config,
                                                     KvBlockIo& io) {
  if (config.block_size <= 0 || io.block_bytes() <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "kv offload: blocks of {} tokens, {} bytes",
                      config.block_size, io.block_bytes());
  }
  std::unique_ptr<KvOffload> offload(new KvOffload(config, io));
  if (!config.disk_dir.empty()) {
    KvDiskTierConfig dc;
    dc.dir = config.disk_dir;
    dc.capacity_bytes = config.disk_bytes;
    dc.fingerprint = config.fingerprint;
    dc.block_size = config.block_size;
    dc.block_bytes = io.block_bytes();
    TALLY_ASSIGN_OR_RETURN(offload->disk_, KvDiskTier::open(dc));
  }
  return offload;
}

bool KvOffload::pinned(const PrefixKey& key) const {
  return std::find(pinned_.begin(), pinned_.end(), key) != pinned_.end();
}

void KvOffload::pin(const PrefixKey& key) {
  pinned_.push_back(key);
  if (disk_) disk_->touch(key);
}

KvOffload::HostLru::iterator KvOffload::host_find(const KvTierQuery& q) const {
  auto [it, end] = host_index_.equal_range(q.key);
  for (; it != end; ++it) {
    if (it->second->id.matches(q)) return it->second;
  }
  return host_.end();
}

void KvOffload::host_unindex(HostLru::iterator entry) {
  auto [it, end] = host_index_.equal_range(entry->id.key);
  for (; it != end; ++it) {
    if (it->second == entry) {
      host_index_.erase(it);
      break;
    }
  }
  host_bytes_ -= entry->cost();
}

bool KvOffload::host_evict_one(HostEntry& evicted) {
  auto it = host_.end();
  while (it != host_.begin()) {
    --it;
    if (!pinned(it->id.key)) break;
  }
  if (it == host_.end() || pinned(it->id.key)) return false;
  host_unindex(it);
  evicted = std::move(*it);
  host_.erase(it);
  if (disk_ && !disk_->contains_key(evicted.id.key)) {
    if (disk_->write(evicted.id, evicted.bytes)) ++stats_.disk_stores;
  }
  return true;
}

void KvOffload::host_insert(HostEntry entry) {
  host_bytes_ += entry.cost();
  host_.push_front(std::move(entry));
  host_index_.emplace(host_.front().id.key, host_.begin());
}

void KvOffload::store_evicted(const PrefixBlockInfo& info, BlockId block) {
  // A block whose whole prefix is unknown could never be checked on a hit: not stored.
  if (info.prefix.empty()) return;
  if (!has_host()) {
    store_on_disk(info, block);
    return;
  }
  if (auto it = host_find(info); it != host_.end()) {
    host_.splice(host_.begin(), host_, it);
    return;
  }
  HostEntry entry;
  entry.id = KvTierBlockId::from(info);
  const int64_t cost = block_bytes_ + static_cast<int64_t>(entry.id.prefix.size() *
                                                           sizeof(int32_t) + entry.id.salt.size());
  HostEntry evicted;
  while (host_bytes_ + cost > max_host_bytes_) {
    if (!host_evict_one(evicted)) {  // every host block is pinned (or it is too big)
      store_on_disk(info, block);
      return;
    }
  }
  entry.bytes = std::move(evicted.bytes);  // an evicted block's buffer is reused
  entry.bytes.resize(static_cast<size_t>(block_bytes_));
  io_.save_block(block, entry.bytes);
  host_insert(std::move(entry));
  ++stats_.host_stores;
}

void KvOffload::store_on_disk(const PrefixBlockInfo& info, BlockId block) {
  if (!disk_) return;
  if (disk_->contains(info)) {
    disk_->touch(info.key);
    return;
  }
  io_.save_block(block, scratch_);
  if (disk_->write(KvTierBlockId::from(info), scratch_)) ++stats_.disk_stores;
}

KvTier KvOffload::find(const KvTierQuery& q) const {
  if (host_find(q) != host_.end()) return KvTier::kHost;
  if (disk_ && disk_->contains(q)) return KvTier::kDisk;
  return KvTier::kNone;
}

bool KvOffload::load(const KvTierQuery& q, BlockId block) {
  const auto start = std::chrono::steady_clock::now();
  if (auto it = host_find(q); it != host_.end()) {
    // It stays in the host tier too: when the pool evicts it again, nothing is copied.
    io_.load_block(block, it->bytes);
    host_.splice(host_.begin(), host_, it);
    ++stats_.host_hits;
    stats_.host_hit_bytes += block_bytes_;
    host_s_per_block_ = kv_offload_ema(host_s_per_block_, kv_offload_seconds_since(start));
    return true;
  }
  if (!disk_ || !disk_->read(q, scratch_)) return false;
  io_.load_block(block, scratch_);
  ++stats_.disk_hits;
  stats_.disk_hit_bytes += block_bytes_;
  disk_s_per_block_ = kv_offload_ema(disk_s_per_block_, kv_offload_seconds_since(start));
  return true;
}

void KvOffload::note_recompute(int64_t tokens, double seconds) {
  if (tokens <= 0 || seconds <= 0) return;
  recompute_s_per_token_ = kv_offload_ema(recompute_s_per_token_, seconds / static_cast<double>(tokens));
}

bool KvOffload::worth_loading(int32_t n_host, int32_t n_disk) const {
  if (recompute_s_per_token_ == 0) return true;  // nothing measured: loading is the bet
  const double load_s = n_host * host_s_per_block_ + n_disk * disk_s_per_block_;
  const double compute_s =
      static_cast<double>(n_host + n_disk) * config_.block_size * recompute_s_per_token_;
  return load_s <= compute_s;
}

KvOffloadStats KvOffload::stats() const {
  KvOffloadStats s = stats_;
  s.host_blocks = static_cast<int64_t>(host_.size());
  s.host_bytes = host_bytes_;
  if (disk_) {
    s.disk_blocks = disk_->n_blocks();
    s.disk_bytes = disk_->bytes_on_disk();
    s.disk_errors = disk_->errors();
  }
  return s;
}

}  // namespace tally
