// Open-addressing hash indexes for the vocabulary (text -> id) and the BPE merges
// (token pair -> merge). Built once, read-only afterwards; a lookup touches one flat slot
// array, where node-based std::unordered_map costs a cache miss per node (loading a
// 100K-token vocabulary spent most of its time there). The slot arrays of real vocabularies
// are megabytes, filled at once: on huge pages (base/huge_page_allocator.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/huge_page_allocator.h"

namespace tally::tok {

// Power-of-two slot count with load factor <= 1/2.
inline size_t flat_capacity_for(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;
  return cap;
}

// Text -> id over a vector of strings that must outlive the index and not change.
class TextIndex {
 public:
  // Later duplicates win (llama.cpp's token_to_id does the same).
  void build(const std::vector<std::string>& texts) {
    texts_ = &texts;
    slots_.assign(flat_capacity_for(texts.size()), Slot{});
    mask_ = slots_.size() - 1;
    for (size_t id = 0; id < texts.size(); ++id) {
      const uint64_t h = hash(texts[id]);
      slots_[slot_of(texts[id], h)] = {static_cast<uint32_t>(h), static_cast<int32_t>(id)};
    }
  }

  int32_t find(std::string_view s) const {
    return slots_.empty() ? -1 : slots_[slot_of(s, hash(s))].id;
  }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;
  };
  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  // The slot holding `s`, or the empty slot where it would go.
  size_t slot_of(std::string_view s, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id < 0) return i;
      if (slot.hash == static_cast<uint32_t>(h) && (*texts_)[slot.id] == s) return i;
    }
  }

  const std::vector<std::string>* texts_ = nullptr;
  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  size_t mask_ = 0;
};

// (left id, right id) -> value, ids >= 0; the first insertion of a pair wins.
template <typename Value>
class PairIndex {
 public:
  // Sizes the table for up to `n` pairs; insert() beyond that is refused.
  void reserve(size_t n) {
    slots_.assign(flat_capacity_for(n), Slot{});
    shift_ = 64;
    for (size_t cap = slots_.size(); cap > 1; cap >>= 1) --shift_;
    max_size_ = n;
  }
  // False if the pair was already there or the table is full.
  bool insert(int32_t left, int32_t right, const Value& v) {
    if (size_ >= max_size_) return false;
    const uint64_t k = key(left, right);
    Slot& slot = slots_[slot_of(k)];
    if (slot.key != kEmpty) return false;
    slot = {k, v};
    ++size_;
    return true;
  }
  const Value* find(int32_t left, int32_t right) const {
    if (size_ == 0) return nullptr;
    const Slot& slot = slots_[slot_of(key(left, right))];
    return slot.key != kEmpty ? &slot.value : nullptr;
  }
  size_t size() const { return size_; }

 private:
  // No key of two ids >= 0 has its top bit set: an all-ones key marks an empty slot (a flag
  // beside the key would pad a {rank, id} slot from 16 to 24 bytes).
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Value value{};
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t k) const {
    const size_t mask = slots_.size() - 1;
    // Fibonacci hashing: the top bits of k * 2^64/phi spread nearby ids over the table.
    for (size_t i = (k * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.key == kEmpty || slot.key == k) return i;
    }
  }

  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  unsigned shift_ = 64;
  size_t size_ = 0;
  size_t max_size_ = 0;
};

}  // namespace tally::tok
