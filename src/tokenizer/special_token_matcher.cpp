#include "tokenizer/special_token_matcher.h"

namespace tally::tok {

namespace {

uint64_t edge_key(int32_t node, uint8_t byte) {
  return (static_cast<uint64_t>(node) << 8) | byte;
}

}  // namespace

SpecialTokenMatcher::SpecialTokenMatcher(const VocabTables& vocab) {
  terminal_.emplace_back();  // root
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.type[id];
    const bool always = type == TokenType::kUserDefined;
    if (!always && type != TokenType::kControl && type != TokenType::kUnknown) continue;
    const std::string& text = vocab.text[id];
    if (text.empty()) continue;
    int32_t node = 0;
    for (char c : text) {
      const auto byte = static_cast<uint8_t>(c);
      auto [it, inserted] = edges_.try_emplace(edge_key(node, byte),
                                               static_cast<int32_t>(terminal_.size()));
      if (inserted) terminal_.emplace_back();
      node = it->second;
    }
    // Same text twice: keep the later id, as the text -> id index does.
    terminal_[node] = {id, always};
    first_byte_[static_cast<uint8_t>(text[0])] = true;
  }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  auto it = edges_.find(edge_key(node, byte));
  return it == edges_.end() ? -1 : it->second;
}

std::pair<int32_t, size_t> SpecialTokenMatcher::match_at(std::string_view text, size_t pos,
                                                         bool parse_special) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    const Terminal& t = terminal_[node];
    if (t.token >= 0 && (t.always || parse_special)) best = {t.token, i + 1 - pos};
  }
  return best;
}

void SpecialTokenMatcher::split(std::string_view text, bool parse_special,
                                std::vector<TextFragment>& out) const {
  out.clear();
  size_t text_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [token, length] = match_at(text, pos, parse_special);
    if (token < 0) {
      ++pos;
      continue;
    }
    if (pos > text_start) out.push_back({-1, text_start, pos - text_start});
    out.push_back({token, pos, length});
    pos += length;
    text_start = pos;
  }
  if (text.size() > text_start) out.push_back({-1, text_start, text.size() - text_start});
}

}  // namespace tally::tok
