#include "kv/kv_disk_tier.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "base/check.h"
#include "base/log.h"

namespace tally {

namespace {

constexpr char kKvFileMagic[8] = {'T', 'L', 'Y', 'K', 'V', 'B', '0', '1'};
constexpr uint32_t kKvFileVersion = 2;  // 2: the whole prefix's token ids
constexpr size_t kKvFileHeaderBytes = 88;  // see kv_disk_header_put
// A prefix longer than any context: a header claiming more is not a block file.
constexpr uint32_t kKvFileMaxPrefix = 1u << 24;
constexpr const char* kKvFileSuffix = ".kvb";

struct KvDiskHeader {
  uint32_t block_size = 0;
  uint64_t payload_bytes = 0;
  PrefixKey fingerprint;
  PrefixKey key;
  PrefixKey parent_key;
  uint8_t first = 0;
  uint32_t salt_bytes = 0;
  uint32_t prefix_tokens = 0;  // token ids from the sequence's start through this block
};

template <typename T>
void kv_disk_put(std::byte*& at, const T& v) {
  std::memcpy(at, &v, sizeof v);
  at += sizeof v;
}
template <typename T>
void kv_disk_get(const std::byte*& at, T& v) {
  std::memcpy(&v, at, sizeof v);
  at += sizeof v;
}

void kv_disk_header_put(std::byte* at, const KvDiskHeader& h) {
  std::memcpy(at, kKvFileMagic, sizeof kKvFileMagic);
  at += sizeof kKvFileMagic;
  kv_disk_put(at, kKvFileVersion);
  kv_disk_put(at, h.block_size);
  kv_disk_put(at, h.payload_bytes);
  for (const PrefixKey* k : {&h.fingerprint, &h.key, &h.parent_key}) {
    kv_disk_put(at, k->low);
    kv_disk_put(at, k->high);
  }
  const uint8_t flags[4] = {h.first, 0, 0, 0};
  kv_disk_put(at, flags);
  kv_disk_put(at, h.salt_bytes);
  kv_disk_put(at, h.prefix_tokens);
  kv_disk_put(at, uint32_t{0});  // reserved
}

// False when the bytes are not a header of this format and version.
bool kv_disk_header_get(const std::byte* at, KvDiskHeader& h) {
  if (std::memcmp(at, kKvFileMagic, sizeof kKvFileMagic) != 0) return false;
  at += sizeof kKvFileMagic;
  uint32_t version = 0;
  kv_disk_get(at, version);
  if (version != kKvFileVersion) return false;
  kv_disk_get(at, h.block_size);
  kv_disk_get(at, h.payload_bytes);
  for (PrefixKey* k : {&h.fingerprint, &h.key, &h.parent_key}) {
    kv_disk_get(at, k->low);
    kv_disk_get(at, k->high);
  }
  uint8_t flags[4];
  kv_disk_get(at, flags);
  h.first = flags[0];
  kv_disk_get(at, h.salt_bytes);
  kv_disk_get(at, h.prefix_tokens);
  return h.first <= 1 && h.salt_bytes < (1u << 20) && h.block_size > 0 &&
         h.prefix_tokens >= h.block_size && h.prefix_tokens <= kKvFileMaxPrefix &&
         h.prefix_tokens % h.block_size == 0 && (h.first == 1) == (h.prefix_tokens == h.block_size);
}

// Reads exactly n bytes from the start of `path`; false when the file is shorter or unreadable.
bool kv_disk_read_prefix(const std::filesystem::path& path, std::byte* out, size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const size_t got = std::fread(out, 1, n, f);
  std::fclose(f);
  return got == n;
}

}  // namespace

std::string kv_key_hex(const PrefixKey& key) {
  return fmt::format("{:016x}{:016x}", key.high, key.low);
}

int64_t KvDiskTier::file_bytes(int64_t prefix_tokens, int64_t block_bytes, size_t salt_bytes) {
  return static_cast<int64_t>(kKvFileHeaderBytes + salt_bytes) +
         prefix_tokens * static_cast<int64_t>(sizeof(int32_t)) + block_bytes +
         static_cast<int64_t>(sizeof(uint64_t));
}

bool KvDiskTier::Entry::candidate(const KvTierQuery& q) const {
  if (!(key == q.key) || first != q.first || salt != q.salt) return false;
  if (!first && !(parent_key == q.parent_key)) return false;
  return prefix_tokens == static_cast<int64_t>(q.prefix.size()) &&
         std::equal(tokens.begin(), tokens.end(), q.tokens.begin(), q.tokens.end());
}

KvDiskTier::KvDiskTier(const KvDiskTierConfig& config)
    : config_(config), path_(std::filesystem::path(config.dir) / kv_key_hex(config.fingerprint)) {}

Result<std::unique_ptr<KvDiskTier>> KvDiskTier::open(const KvDiskTierConfig& config) {
  if (config.dir.empty() || config.capacity_bytes <= 0 || config.block_size <= 0 ||
      config.block_bytes <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "kv disk tier: dir '{}', {} bytes, block of {} tokens / {} bytes", config.dir,
                      config.capacity_bytes, config.block_size, config.block_bytes);
  }
  std::unique_ptr<KvDiskTier> tier(new KvDiskTier(config));
  std::error_code ec;
  std::filesystem::create_directories(tier->path_, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, "--kv-offload-dir: cannot create {}: {}",
                      tier->path_.string(), ec.message());
  }
  tier->index_existing();
  return tier;
}

void KvDiskTier::fail(const std::string& what) {
  ++errors_;
  // A broken disk would log every block: the first few, then every 1000th.
  if (errors_ <= 10 || errors_ % 1000 == 0) {
    spdlog::warn("kv disk tier: {} (a miss; {} disk errors so far)", what, errors_);
  }
}

std::filesystem::path KvDiskTier::file_of(const PrefixKey& key) const {
  return path_ / (kv_key_hex(key) + kKvFileSuffix);
}

void KvDiskTier::index_existing() {
  std::error_code ec;
  std::vector<std::byte> head;
  for (const auto& e : std::filesystem::directory_iterator(path_, ec)) {
    const std::filesystem::path& p = e.path();
    if (p.extension() != kKvFileSuffix) {
      if (p.extension() == ".tmp") std::filesystem::remove(p, ec);  // a write cut short
      continue;
    }
    KvDiskHeader h;
    head.resize(kKvFileHeaderBytes);
    bool ok = kv_disk_read_prefix(p, head.data(), head.size()) &&
              kv_disk_header_get(head.data(), h) && h.fingerprint == config_.fingerprint &&
              h.block_size == static_cast<uint32_t>(config_.block_size) &&
              h.payload_bytes == static_cast<uint64_t>(config_.block_bytes) &&
              p.filename() == kv_key_hex(h.key) + kKvFileSuffix;
    const int64_t bytes = ok ? file_bytes(h.prefix_tokens, config_.block_bytes, h.salt_bytes) : 0;
    ok = ok && static_cast<int64_t>(e.file_size(ec)) == bytes && !ec;
    const size_t tokens_end = kKvFileHeaderBytes + h.salt_bytes +
                              static_cast<size_t>(h.prefix_tokens) * sizeof(int32_t);
    if (ok) {
      head.resize(tokens_end);
      ok = kv_disk_read_prefix(p, head.data(), head.size());
    }
    if (!ok || bytes_ + bytes > config_.capacity_bytes) {
      if (!ok) fail(fmt::format("{} is not a whole block file of this model: deleted", p.string()));
      std::filesystem::remove(p, ec);
      continue;
    }
    Entry entry;
    entry.key = h.key;
    entry.parent_key = h.parent_key;
    entry.first = h.first != 0;
    const auto* salt = reinterpret_cast<const char*>(head.data() + kKvFileHeaderBytes);
    entry.salt.assign(salt, h.salt_bytes);
    entry.tokens.resize(static_cast<size_t>(config_.block_size));
    std::memcpy(entry.tokens.data(), head.data() + tokens_end - entry.tokens.size() * sizeof(int32_t),
                entry.tokens.size() * sizeof(int32_t));
    entry.prefix_tokens = h.prefix_tokens;
    entry.file_bytes = bytes;
    bytes_ += bytes;
    lru_.push_back(std::move(entry));
    index_[lru_.back().key] = std::prev(lru_.end());
  }
  if (ec) fail(fmt::format("cannot list {}: {}", path_.string(), ec.message()));
  if (!lru_.empty()) {
    spdlog::info("kv disk tier: {} blocks ({} bytes) reused from {}", lru_.size(), bytes_,
                 path_.string());
  }
}

void KvDiskTier::forget(Lru::iterator it, bool delete_file) {
  if (delete_file) {
    std::error_code ec;
    std::filesystem::remove(file_of(it->key), ec);
  }
  bytes_ -= it->file_bytes;
  index_.erase(it->key);
  lru_.erase(it);
}

bool KvDiskTier::contains(const KvTierQuery& q) const {
  auto it = index_.find(q.key);
  return it != index_.end() && it->second->candidate(q);
}

void KvDiskTier::touch(const PrefixKey& key) {
  auto it = index_.find(key);
  if (it != index_.end()) lru_.splice(lru_.begin(), lru_, it->second);
}

bool KvDiskTier::write(const KvTierBlockId& id, std::span<const std::byte> payload) {
  TALLY_CHECK(static_cast<int64_t>(payload.size()) == config_.block_bytes &&
                  !id.prefix.empty() && id.prefix.size() % config_.block_size == 0,
              "kv disk tier: block of {} bytes / a prefix of {} tokens", payload.size(),
              id.prefix.size());
  if (auto it = index_.find(id.key); it != index_.end()) forget(it->second, true);
  const auto n_prefix = static_cast<int64_t>(id.prefix.size());
  const int64_t bytes = file_bytes(n_prefix, config_.block_bytes, id.salt.size());
  if (bytes > config_.capacity_bytes) return false;
  while (bytes_ + bytes > config_.capacity_bytes) forget(std::prev(lru_.end()), true);

  scratch_.resize(static_cast<size_t>(bytes));
  KvDiskHeader h{static_cast<uint32_t>(config_.block_size), payload.size(), config_.fingerprint,
                 id.key, id.parent_key, static_cast<uint8_t>(id.first ? 1 : 0),
                 static_cast<uint32_t>(id.salt.size()), static_cast<uint32_t>(n_prefix)};
  kv_disk_header_put(scratch_.data(), h);
  std::byte* at = scratch_.data() + kKvFileHeaderBytes;
  std::memcpy(at, id.salt.data(), id.salt.size());
  at += id.salt.size();
  std::memcpy(at, id.prefix.data(), id.prefix.size() * sizeof(int32_t));
  at += id.prefix.size() * sizeof(int32_t);
  std::memcpy(at, payload.data(), payload.size());
  at += payload.size();
  const uint64_t sum = XXH3_64bits(scratch_.data(), static_cast<size_t>(at - scratch_.data()));
  std::memcpy(at, &sum, sizeof sum);

  // Written under a temporary name and renamed: a reader never sees half a file.
  const std::filesystem::path final_path = file_of(id.key);
  std::filesystem::path tmp = final_path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fwrite(scratch_.data(), 1, scratch_.size(), f) == scratch_.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  std::error_code ec;
  if (ok) {
    std::filesystem::rename(tmp, final_path, ec);
    ok = !ec;
  }
  if (!ok) {
    std::filesystem::remove(tmp, ec);
    fail(fmt::format("cannot write {}: {}", final_path.string(), std::strerror(errno)));
    return false;
  }
  const std::span<const int32_t> own = id.tokens(config_.block_size);
  lru_.push_front(Entry{id.key, id.parent_key, id.first, id.salt,
                        std::vector<int32_t>(own.begin(), own.end()), n_prefix, bytes});
  index_[id.key] = lru_.begin();
  bytes_ += bytes;
  return true;
}

bool KvDiskTier::read(const KvTierQuery& q, std::span<std::byte> payload) {
  auto found = index_.find(q.key);
  if (found == index_.end() || !found->second->candidate(q)) return false;
  const Lru::iterator it = found->second;
  const std::filesystem::path p = file_of(q.key);
  scratch_.resize(static_cast<size_t>(it->file_bytes) + 1);  // one more: a grown file shows
  std::FILE* f = std::fopen(p.c_str(), "rb");
  size_t got = 0;
  if (f != nullptr) {
    got = std::fread(scratch_.data(), 1, scratch_.size(), f);
    std::fclose(f);
  }
  const auto want = static_cast<size_t>(it->file_bytes);
  KvDiskHeader h;
  bool ok = got == want && kv_disk_header_get(scratch_.data(), h);
  if (ok) {
    uint64_t sum = 0;
    std::memcpy(&sum, scratch_.data() + want - sizeof sum, sizeof sum);
    ok = sum == XXH3_64bits(scratch_.data(), want - sizeof sum);
  }
  // The checksum covers the header, so these compare what the file really says.
  const size_t prefix_at = kKvFileHeaderBytes + h.salt_bytes;
  const size_t tokens_at = prefix_at + (static_cast<size_t>(h.prefix_tokens) - it->tokens.size()) *
                                           sizeof(int32_t);
  ok = ok && h.fingerprint == config_.fingerprint && h.key == q.key &&
       h.payload_bytes == payload.size() && h.salt_bytes == it->salt.size() &&
       h.prefix_tokens == it->prefix_tokens &&
       std::memcmp(scratch_.data() + tokens_at, it->tokens.data(),
                   it->tokens.size() * sizeof(int32_t)) == 0;
  if (!ok) {
    fail(fmt::format("{} is {}: dropped", p.string(),
                     f == nullptr ? "missing" : (got != want ? "truncated or resized" : "corrupt")));
    forget(it, true);
    return false;
  }
  // A whole file of another prefix (keys that collide): a miss, and the file stays.
  if (std::memcmp(scratch_.data() + prefix_at, q.prefix.data(), q.prefix.size_bytes()) != 0) {
    return false;
  }
  std::memcpy(payload.data(), scratch_.data() + prefix_at + q.prefix.size_bytes(), payload.size());
  lru_.splice(lru_.begin(), lru_, it);
  return true;
}

}  // namespace tally
