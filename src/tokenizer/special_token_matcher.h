// Finds special-token texts inside raw text before the model's own splitting, as llama.cpp and
// Hugging Face tokenizers do:
//   - user-defined tokens (added tokens such as MPT's runs of spaces or DeepSeek's "õ") are
//     always recognised: the golden vectors need this even with parse_special = false;
//   - control and unknown tokens ("<s>", "<|im_start|>") only when parse_special is true.
// At each position the longest eligible token wins, scanning left to right (a byte trie).
// llama.cpp instead takes tokens longest-first over the whole text; the two differ only when
// two special texts overlap each other, which no known vocabulary relies on. lstrip/rstrip
// token attributes (absent from GGUF) are not applied.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab_tables.h"

namespace tally::tok {

// A piece of the input: a special token (token >= 0) or the text [offset, offset + length).
struct TextFragment {
  int32_t token = -1;
  size_t offset = 0;
  size_t length = 0;
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const VocabTables& vocab);

  // Replaces `out` with the fragments of `text`, in order (no empty text fragments).
  void split(std::string_view text, bool parse_special, std::vector<TextFragment>& out) const;

  bool empty() const { return terminal_.size() <= 1; }

 private:
  struct Terminal {
    int32_t token = -1;
    bool always = false;  // user-defined: matched even without parse_special
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // Longest eligible match at text[pos...]: {token, length}, token -1 if none.
  std::pair<int32_t, size_t> match_at(std::string_view text, size_t pos, bool parse_special) const;

  std::vector<Terminal> terminal_;                 // [n_nodes]; node 0 is the root
  std::unordered_map<uint64_t, int32_t> edges_;    // (node << 8 | byte) -> child node
  std::array<bool, 256> first_byte_{};             // bytes that can start a special text
};

}  // namespace tally::tok
