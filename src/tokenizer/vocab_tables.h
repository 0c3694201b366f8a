// The vocabulary as the encoders read it: texts, scores, types and a text -> id index.
// Built once; the index holds views into `text`, so a VocabTables never moves or changes
// after build_index().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer_vocab.h"

namespace tally::tok {

struct VocabTables {
  std::vector<std::string> text;   // [n_vocab]
  std::vector<float> score;        // [n_vocab]
  std::vector<TokenType> type;     // [n_vocab]
  std::unordered_map<std::string_view, int32_t> id_of;

  VocabTables() = default;
  VocabTables(const VocabTables&) = delete;
  VocabTables& operator=(const VocabTables&) = delete;

  int32_t size() const { return static_cast<int32_t>(text.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }

  // A later token with the same text wins, as in llama.cpp (e.g. DeepSeek's added "õ").
  void build_index() {
    id_of.clear();
    id_of.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) id_of[text[i]] = static_cast<int32_t>(i);
  }

  int32_t find(std::string_view s) const {
    auto it = id_of.find(s);
    return it == id_of.end() ? -1 : it->second;
  }
};

}  // namespace tally::tok
