// The vocabulary as the encoders read it: texts, scores, types and a text -> id index.
// Built once; the index holds views into `text`, so a VocabTables never moves or changes
// after build_index().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/flat_index.h"
#include "tokenizer/tokenizer_vocab.h"

namespace tally::tok {

struct VocabTables {
  std::vector<std::string> text;   // [n_vocab]
  std::vector<float> score;        // [n_vocab]
  std::vector<TokenType> type;     // [n_vocab]
  TextIndex id_of;

  VocabTables() = default;
  VocabTables(const VocabTables&) = delete;
  VocabTables& operator=(const VocabTables&) = delete;

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }

  // A later token with the same text wins, as in llama.cpp (e.g. DeepSeek's added "õ").
  void build_index() { id_of.build(text); }

  int32_t find(std::string_view s) const { return id_of.find(s); }
};

}  // namespace tally::tok
