#include "tokenizer/spm_encoder.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "base/check.h"
#include "tokenizer/utf8.h"

namespace tally::tok {

namespace {

struct Symbol {
  uint32_t offset;  // into the text
  uint32_t n;       // bytes; 0 once merged into its left neighbour
  int32_t prev;
  int32_t next;
  int32_t id;       // token of this symbol's text, -1 if none
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t size;  // bytes of left + right when queued: a stale entry no longer matches
  int32_t id;
};

// Max-heap order: higher score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmEncoder::SpmEncoder(const VocabTables& vocab, int32_t unk_id) : vocab_(vocab), unk_id_(unk_id) {
  for (int b = 0; b < 256; ++b) {
    const int32_t id = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_ids_[b] = id >= 0 && vocab_.type[id] == TokenType::kByte ? id : -1;
  }
}

int32_t SpmEncoder::mergeable_id(std::string_view s) const {
  const int32_t id = vocab_.find(s);
  if (id < 0) return -1;
  const TokenType t = vocab_.type[id];
  const bool ok = t == TokenType::kNormal || t == TokenType::kUserDefined ||
                  t == TokenType::kUndefined;
  return ok ? id : -1;
}

void SpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  TALLY_CHECK(text.size() < (size_t{1} << 31), "SPM text of {} bytes is too long", text.size());
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto n = static_cast<uint32_t>(utf8_char_length(text, pos));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(pos), n, index - 1, index + 1,
                       mergeable_id(text.substr(pos, n))});
    pos += n;
  }
  symbols.back().next = -1;

  std::vector<Bigram> heap;
  heap.reserve(symbols.size());
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t size = symbols[left].n + symbols[right].n;
    const int32_t id = mergeable_id(text.substr(symbols[left].offset, size));
    // -infinity: no merge of the Hugging Face model makes this token (tokenizer_hf.h).
    if (id < 0 || vocab_.score[id] == -std::numeric_limits<float>::infinity()) return;
    heap.push_back({vocab_.score[id], left, right, size, id});
    std::push_heap(heap.begin(), heap.end(), BigramLess{});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess{});
    const Bigram bigram = heap.back();
    heap.pop_back();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
    left.n += right.n;
    left.id = bigram.id;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // Byte fallback; a vocabulary without byte tokens gets one unknown token per character.
    auto byte_id = [&](uint32_t k) { return byte_ids_[static_cast<uint8_t>(text[s.offset + k])]; };
    bool all_bytes = true;
    for (uint32_t k = 0; k < s.n; ++k) all_bytes = all_bytes && byte_id(k) >= 0;
    if (!all_bytes) {
      if (unk_id_ >= 0) out.push_back(unk_id_);
      continue;
    }
    for (uint32_t k = 0; k < s.n; ++k) out.push_back(byte_id(k));
  }
}

}  // namespace tally::tok
