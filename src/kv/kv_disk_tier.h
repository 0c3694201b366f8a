// The disk tier below the host tier: one file per KV block in DIR/<fingerprint>/, bounded by a
// byte budget (least recently used files deleted first), reused by a server restarted with the
// same directory, model file and KV types (the fingerprint covers all three).
//
// A file: a fixed header (magic, version, block size, payload bytes, fingerprint, key, parent
// key, first-block flag, salt length, prefix length), the salt, the token ids of the whole
// prefix (the sequence's start through this block), the payload (the block's K/V bytes), then
// an XXH3-64 checksum of everything before it. open() reads the headers and token ids of the
// files already there (not their payload) and keeps only the block's own tokens in memory;
// read() verifies the whole file and compares the whole prefix. A file that is missing,
// truncated, corrupt or foreign, and a write that fails (full or read-only disk), is a miss: a
// warning in the log and a count in errors(), never a crash or wrong KV. A whole file whose
// prefix differs from the request's (keys that collide) is a plain miss.
//
// Thread rules: not thread-safe; the engine thread alone (through KvOffload).
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_tier_block.h"

namespace tally {

struct KvDiskTierConfig {
  std::string dir;          // the parent directory (--kv-offload-dir)
  int64_t capacity_bytes = 0;
  PrefixKey fingerprint;    // model file + KV types + shapes: the subdirectory's name
  int32_t block_size = 0;   // tokens per block
  int64_t block_bytes = 0;  // payload bytes per block
};

class KvDiskTier {
 public:
  // Creates DIR/<fingerprint>/ when missing and indexes the files in it (deleting the ones
  // that are not whole block files of this shape). InvalidArgument / IoError when the
  // directory cannot be made or listed.
  static Result<std::unique_ptr<KvDiskTier>> open(const KvDiskTierConfig& config);

  // Bytes of one block's file (`prefix_tokens`: the block's end position).
  static int64_t file_bytes(int64_t prefix_tokens, int64_t block_bytes, size_t salt_bytes);
  int64_t n_blocks() const { return static_cast<int64_t>(lru_.size()); }
  int64_t bytes_on_disk() const { return bytes_; }
  int64_t errors() const { return errors_; }
  const std::filesystem::path& path() const { return path_; }

  // Whether a file is a candidate for `q` (all but the prefix's earlier token ids checked:
  // those stay on disk); read() has the last word.
  bool contains(const KvTierQuery& q) const;
  bool contains_key(const PrefixKey& key) const { return index_.count(key) != 0; }
  // Writes a block (replacing one with the same key), deleting the least recently used files
  // past the budget first. False (counted, warned) when the write fails.
  bool write(const KvTierBlockId& id, std::span<const std::byte> payload);
  // Reads the block `q` asks for into `payload` (block_bytes) after checking the file whole
  // and its prefix; false when it is not there, is another prefix's (kept) or is damaged (then
  // it is forgotten and deleted).
  bool read(const KvTierQuery& q, std::span<std::byte> payload);
  // Marks a block most recently used.
  void touch(const PrefixKey& key);

 private:
  // What the index keeps of a file: its identity with only the block's own token ids (the
  // whole prefix stays in the file, read() compares it).
  struct Entry {
    PrefixKey key;
    PrefixKey parent_key;
    bool first = false;
    std::string salt;
    std::vector<int32_t> tokens;  // [block_size]
    int64_t prefix_tokens = 0;
    int64_t file_bytes = 0;
    // Everything but the prefix's earlier tokens equal: worth reading.
    bool candidate(const KvTierQuery& q) const;
  };
  using Lru = std::list<Entry>;  // front: most recently used

  explicit KvDiskTier(const KvDiskTierConfig& config);
  std::filesystem::path file_of(const PrefixKey& key) const;
  void index_existing();
  void forget(Lru::iterator it, bool delete_file);
  void fail(const std::string& what);

  KvDiskTierConfig config_;
  std::filesystem::path path_;
  int64_t bytes_ = 0;
  int64_t errors_ = 0;
  Lru lru_;
  std::unordered_map<PrefixKey, Lru::iterator, PrefixKeyHasher> index_;
  std::vector<std::byte> scratch_;  // a whole file while it is read or written
};

// A hex name for a 128-bit key or fingerprint (32 characters).
std::string kv_key_hex(const PrefixKey& key);

}  // namespace tally
