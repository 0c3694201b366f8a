#include "tokenizer/bpe_encoder.h"

#include <algorithm>

#include "base/check.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tally::tok {

namespace {

struct BpeSymbol {
  int32_t id;  // -1: a byte the vocabulary cannot spell (never merges)
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;   // ids when queued: a stale candidate no longer matches them
  int32_t right_id;
  int32_t result;
};

// Max-heap order: lowest rank first, then the leftmost pair.
struct CandidateLess {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

// Buffers reused across the words of one encode() call.
struct BpeEncoder::Scratch {
  std::vector<BpeSymbol> symbols;
  std::vector<Candidate> heap;
  std::string spelled;
};

BpeEncoder::BpeEncoder(const VocabTables& vocab, bool ignore_merges, int32_t unk_id)
    : vocab_(vocab), ignore_merges_(ignore_merges), unk_id_(unk_id) {
  for (int b = 0; b < 256; ++b) {
    byte_ids_[b] = vocab_.find(byte_level_char(static_cast<uint8_t>(b)));
  }
}

Result<std::unique_ptr<BpeEncoder>> BpeEncoder::create(const VocabTables& vocab,
                                                       const std::vector<std::string>& merges,
                                                       const PreTokenizerSpec& spec,
                                                       int32_t unk_id) {
  std::unique_ptr<BpeEncoder> enc(new BpeEncoder(vocab, spec.ignore_merges, unk_id));
  TALLY_ASSIGN_OR_RETURN(enc->pre_, PreTokenizer::create(spec.patterns));
  enc->merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t space = m.find(' ', 1);  // a part may itself start with a space
    if (space == std::string::npos) continue;
    const std::string_view left(m.data(), space);
    const std::string_view right(m.data() + space + 1, m.size() - space - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t l = vocab.find(left);
    const int32_t r = vocab.find(right);
    const int32_t result = vocab.find(joined);
    if (l < 0 || r < 0 || result < 0) continue;
    enc->merges_.insert(l, r, Merge{static_cast<int32_t>(rank), result});
  }
  return enc;
}

const BpeEncoder::Merge* BpeEncoder::find_merge(int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return nullptr;
  return merges_.find(left, right);
}

void BpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string sanitized;
  if (!utf8_is_valid(text)) {
    sanitized = utf8_sanitize(text, /*per_byte=*/true);
    text = sanitized;
  }
  std::vector<WordSpan> words;
  pre_->split(text, words);
  Scratch scratch;
  for (const WordSpan& w : words) encode_word(text.substr(w.offset, w.length), scratch, out);
}

void BpeEncoder::encode_word(std::string_view word, Scratch& scratch,
                             std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    scratch.spelled.clear();
    byte_level_encode(word, scratch.spelled);
    const int32_t whole = vocab_.find(scratch.spelled);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  TALLY_CHECK(word.size() < (size_t{1} << 31), "BPE word of {} bytes is too long", word.size());
  auto& sym = scratch.symbols;
  auto& heap = scratch.heap;
  sym.clear();
  heap.clear();
  const auto n = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < n; ++i) {
    sym.push_back({byte_ids_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, true});
  }
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Merge* m = find_merge(sym[left].id, sym[right].id);
    if (m == nullptr) return;
    heap.push_back({m->rank, left, right, sym[left].id, sym[right].id, m->result});
    std::push_heap(heap.begin(), heap.end(), CandidateLess{});
  };
  for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateLess{});
    const Candidate c = heap.back();
    heap.pop_back();
    BpeSymbol& left = sym[c.left];
    BpeSymbol& right = sym[c.right];
    if (!left.alive || !right.alive || left.next != c.right || left.id != c.left_id ||
        right.id != c.right_id) {
      continue;
    }
    left.id = c.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int32_t i = 0; i >= 0 && i < n; i = sym[i].next) {
    if (sym[i].id >= 0) {
      out.push_back(sym[i].id);
    } else if (unk_id_ >= 0) {
      out.push_back(unk_id_);
    }
  }
}

}  // namespace tally::tok
