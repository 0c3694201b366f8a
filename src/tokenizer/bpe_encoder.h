// Byte-level BPE (GPT-2 family, llama.cpp's "gpt2" tokenizer model): the text is split into
// words by the pre-tokenizer; each word starts as one symbol per byte (the vocabulary spells
// bytes with GPT-2's byte-level alphabet) and the adjacent pair with the best merge rank
// (earliest in tokenizer.ggml.merges; leftmost on ties) is merged until no ranked pair is left.
//
// Symbols carry token ids and merges are looked up by id pair, so a word costs
// O(n log n) with no string building. Merges whose parts or result are not tokens are dropped
// when the table is built.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/pre_tokenizer_specs.h"
#include "tokenizer/vocab_tables.h"

namespace tally::tok {

class BpeEncoder {
 public:
  static Result<std::unique_ptr<BpeEncoder>> create(const VocabTables& vocab,
                                                    const std::vector<std::string>& merges,
                                                    const PreTokenizerSpec& spec, int32_t unk_id);

  // Appends the ids of `text` (plain text: special tokens were split off before). Invalid
  // UTF-8 becomes one U+FFFD per bad byte first, as llama.cpp does.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

  const PreTokenizer& pre_tokenizer() const { return *pre_; }
  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  struct Scratch;

  BpeEncoder(const VocabTables& vocab, bool ignore_merges, int32_t unk_id);
  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  const VocabTables& vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  bool ignore_merges_;
  int32_t unk_id_;
  std::array<int32_t, 256> byte_ids_{};          // token spelling each byte, -1 if none
  PairIndex<Merge> merges_;                      // (left id, right id) -> merge
};

}  // namespace tally::tok
