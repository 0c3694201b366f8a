// What the kv_disk_block fuzz target does with one input, shared with the seed test
// (tests/unit/kv/kv_disk_fuzz_seeds_test.cpp): the input's first byte holds flags, the rest is
// one block file as KvDiskTier writes it (kv/kv_disk_tier.h). The file goes into an empty tier
// directory under the name its header's key gives it; the tier is opened (which indexes or
// deletes it), asked for the block the header describes, and, on a hit, the payload must be the
// file's; the block is then written back and read again. Anything else the tier does with the
// bytes must be a miss, never a crash or a hit with other bytes.
//
// Flag bit 0: before writing the file, replace its last 8 bytes with the right XXH3-64
// checksum, so the fuzzer reaches the checks behind the checksum.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_disk_tier.h"

namespace tally::fuzz {

// The one tier shape every input is read with.
inline KvDiskTierConfig kv_disk_fuzz_config(const std::string& dir) {
  KvDiskTierConfig c;
  c.dir = dir;
  c.capacity_bytes = int64_t{1} << 20;
  c.fingerprint = PrefixKey{0x1111, 0x2222};
  c.block_size = 4;
  c.block_bytes = 32;
  return c;
}

// Header offsets of format version 2 (kv_disk_tier.cpp's kv_disk_header_put).
inline constexpr size_t kKvFuzzKeyAt = 40, kKvFuzzParentAt = 56, kKvFuzzFlagsAt = 72,
                        kKvFuzzSaltBytesAt = 76, kKvFuzzPrefixAt = 80, kKvFuzzHeaderBytes = 88;

template <typename T>
T kv_fuzz_get(const std::vector<uint8_t>& b, size_t at) {
  T v{};
  if (at + sizeof v <= b.size()) std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

enum class KvDiskFuzzOutcome { kRefused, kIndexedMiss, kHit };

// Runs one input in `dir` (emptied first). Calls __builtin_trap() on a wrong hit.
inline KvDiskFuzzOutcome kv_disk_fuzz_one(const uint8_t* data, size_t size, const std::string& dir) {
  if (size < 1) return KvDiskFuzzOutcome::kRefused;
  std::vector<uint8_t> file(data + 1, data + size);
  if ((data[0] & 1) != 0 && file.size() >= 8) {
    const uint64_t sum = XXH3_64bits(file.data(), file.size() - 8);
    std::memcpy(file.data() + file.size() - 8, &sum, 8);
  }
  const KvDiskTierConfig config = kv_disk_fuzz_config(dir);
  const PrefixKey key{kv_fuzz_get<uint64_t>(file, kKvFuzzKeyAt),
                      kv_fuzz_get<uint64_t>(file, kKvFuzzKeyAt + 8)};
  const std::filesystem::path sub = std::filesystem::path(dir) / kv_key_hex(config.fingerprint);
  std::error_code ec;
  std::filesystem::remove_all(sub, ec);
  std::filesystem::create_directories(sub, ec);
  {
    std::FILE* f = std::fopen((sub / (kv_key_hex(key) + ".kvb")).c_str(), "wb");
    if (f == nullptr) return KvDiskFuzzOutcome::kRefused;
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
  }
  auto tier = KvDiskTier::open(config);
  if (!tier.ok()) __builtin_trap();  // the directory is fine: open must succeed
  if ((*tier)->n_blocks() == 0) return KvDiskFuzzOutcome::kRefused;
  if ((*tier)->n_blocks() != 1) __builtin_trap();

  // Indexed: the file's size matched its header, so every field below lies inside it.
  const uint32_t salt_bytes = kv_fuzz_get<uint32_t>(file, kKvFuzzSaltBytesAt);
  const uint32_t n_prefix = kv_fuzz_get<uint32_t>(file, kKvFuzzPrefixAt);
  const bool first = file[kKvFuzzFlagsAt] != 0;
  const std::string salt(reinterpret_cast<const char*>(file.data()) + kKvFuzzHeaderBytes, salt_bytes);
  std::vector<int32_t> prefix(n_prefix);
  const size_t prefix_at = kKvFuzzHeaderBytes + salt_bytes;
  std::memcpy(prefix.data(), file.data() + prefix_at, prefix.size() * sizeof(int32_t));
  const size_t payload_at = prefix_at + prefix.size() * sizeof(int32_t);
  KvTierQuery q;
  q.key = key;
  q.parent_key = PrefixKey{kv_fuzz_get<uint64_t>(file, kKvFuzzParentAt),
                           kv_fuzz_get<uint64_t>(file, kKvFuzzParentAt + 8)};
  q.first = first;
  q.salt = salt;
  q.prefix = prefix;
  q.tokens = std::span<const int32_t>(prefix).last(static_cast<size_t>(config.block_size));
  if (!(*tier)->contains(q)) __builtin_trap();  // indexed as exactly this block

  std::vector<std::byte> payload(static_cast<size_t>(config.block_bytes));
  if (!(*tier)->read(q, payload)) {
    if ((*tier)->errors() == 0 || (*tier)->n_blocks() != 0) __builtin_trap();  // a counted drop
    return KvDiskFuzzOutcome::kIndexedMiss;
  }
  if (std::memcmp(payload.data(), file.data() + payload_at, payload.size()) != 0) __builtin_trap();

  // What the tier writes it reads back the same.
  KvTierBlockId id{q.key, q.parent_key, q.first, salt, prefix};
  if (!(*tier)->write(id, payload)) __builtin_trap();
  std::vector<std::byte> again(payload.size());
  if (!(*tier)->read(q, again) || again != payload) __builtin_trap();
  return KvDiskFuzzOutcome::kHit;
}

}  // namespace tally::fuzz
