// SentencePiece-style BPE (llama.cpp's SPM tokenizer): the text is cut into UTF-8 characters,
// then the adjacent pair whose concatenation is the highest-scoring vocabulary token is merged,
// again and again (leftmost pair on equal scores), until no pair forms a token. Characters left
// without a token fall back to their bytes (<0xXX> tokens, else the unknown token).
//
// A priority queue of candidate pairs over a linked list of symbols keeps this O(n log n).
// Only normal, user-defined and undefined tokens take part in merges; control, byte, unused
// and unknown tokens never do (as in SentencePiece itself: "<s>" typed in text stays text).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab_tables.h"

namespace tally::tok {

class SpmEncoder {
 public:
  SpmEncoder(const VocabTables& vocab, int32_t unk_id);

  // `text` is already escaped (spaces as U+2581, any prefix added). Appends the ids to `out`.
  // Invalid UTF-8 is fine: each byte of an ill-formed sequence is a symbol of its own and
  // falls back to its byte token. (llama.cpp sizes symbols by the lead byte alone, so a bad
  // lead byte swallows the next bytes; the two agree on valid UTF-8.)
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  int32_t mergeable_id(std::string_view s) const;

  const VocabTables& vocab_;
  int32_t unk_id_;
  std::array<int32_t, 256> byte_ids_{};  // <0xXX> token per byte, -1 if absent
};

}  // namespace tally::tok
