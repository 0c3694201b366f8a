#include "loadgen/dataset.h"

#include <algorithm>
#include <cmath>

#include "loadgen/rng.h"
#include "loadgen/word_list.h"

namespace tally::loadgen {

int Dataset::n_requests() const {
  int n = 0;
  for (const auto& c : conversations) n += static_cast<int>(c.turns.size());
  return n;
}

namespace {

std::string random_words(Rng& rng, int n_words) {
  const auto words = prompt_words();
  std::string out;
  for (int i = 0; i < n_words; ++i) {
    if (i > 0) out += ' ';
    out += words[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(words.size()) - 1))];
  }
  return out;
}

int draw_length(Rng& rng, int len, double ratio) {
  const int lo = std::max(1, static_cast<int>(std::floor(len * (1.0 - ratio))));
  const int hi = std::max(lo, static_cast<int>(std::ceil(len * (1.0 + ratio))));
  return static_cast<int>(rng.uniform_int(lo, hi));
}

}  // namespace

Result<std::string> text_of_length(PromptTokenizer& tok, uint64_t seed, int n_tokens,
                                   const std::string& prefix, int& measured) {
  Rng rng(seed);
  // Enough words: grow until the text has at least n_tokens tokens.
  int n_words = std::max(1, n_tokens / 2);
  std::string text;
  std::vector<int32_t> ids;
  for (int tries = 0;; ++tries) {
    text = prefix + random_words(rng, n_words);
    TALLY_ASSIGN_OR_RETURN(ids, tok.encode(text));
    if (static_cast<int>(ids.size()) >= n_tokens || tries == 20) break;
    n_words *= 2;
  }
  // Cut the ids, decode, and count again: a cut may re-tokenize differently, so aim the cut
  // by the difference until the count is right (a few rounds at most in practice).
  int cut = std::min<int>(n_tokens, static_cast<int>(ids.size()));
  std::string best = text;
  int best_len = static_cast<int>(ids.size());
  for (int round = 0; round < 8 && cut > 0 && cut <= static_cast<int>(ids.size()); ++round) {
    TALLY_ASSIGN_OR_RETURN(std::string candidate,
                           tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + cut)));
    TALLY_ASSIGN_OR_RETURN(auto again, tok.encode(candidate));
    const int len = static_cast<int>(again.size());
    if (std::abs(len - n_tokens) < std::abs(best_len - n_tokens)) {
      best = candidate;
      best_len = len;
    }
    if (len == n_tokens) break;
    cut += n_tokens - len;
  }
  measured = best_len;
  return best;
}

namespace {

// repeat: one passage of about a third of the length, said three times (a copy-heavy prompt:
// n-gram speculation finds its drafts in it). `measured` gets the whole text's tokens.
Result<std::string> repeated_text(PromptTokenizer& tok, uint64_t seed, int n_tokens,
                                  int& measured) {
  int got = 0;
  TALLY_ASSIGN_OR_RETURN(std::string passage,
                         text_of_length(tok, seed, std::max(1, n_tokens / 3), "", got));
  std::string text = passage + ' ' + passage + ' ' + passage;
  TALLY_ASSIGN_OR_RETURN(auto ids, tok.encode(text));
  measured = static_cast<int>(ids.size());
  return text;
}

}  // namespace

Result<Dataset> make_synthetic_dataset(const SyntheticConfig& c, PromptTokenizer& tok) {
  if (c.name != "random" && c.name != "shared-prefix" && c.name != "multi-turn" &&
      c.name != "repeat") {
    return make_error(ErrorCode::kInvalidArgument, "unknown synthetic dataset '{}'", c.name);
  }
  Dataset d;
  d.name = c.name;
  d.tokenizer = tok.description();
  d.exact_lengths = tok.exact();
  Rng rng(c.seed);
  auto next_seed = [&rng] { return rng.next(); };
  std::string random_prefix;  // random: the prefix every prompt starts with
  if (c.name == "random" && c.prefix_len > 0) {
    int got = 0;
    TALLY_ASSIGN_OR_RETURN(random_prefix, text_of_length(tok, next_seed(), c.prefix_len, "", got));
    random_prefix += ' ';
  }
  std::vector<std::string> systems;  // shared-prefix: one per group
  for (int g = 0; c.name == "shared-prefix" && g < std::max(1, c.prefix_groups); ++g) {
    int got = 0;
    TALLY_ASSIGN_OR_RETURN(std::string s, text_of_length(tok, next_seed(), c.prefix_len, "", got));
    if (got != c.prefix_len) d.exact_lengths = false;
    systems.push_back(std::move(s));
  }
  const int per_conv = c.name == "multi-turn" ? std::max(1, c.turns) : 1;
  for (int made = 0; made < c.num_prompts;) {
    Conversation conv;
    if (!systems.empty()) conv.system = systems[d.conversations.size() % systems.size()];
    for (int t = 0; t < per_conv && made < c.num_prompts; ++t, ++made) {
      DatasetTurn turn;
      const int in_len = draw_length(rng, c.input_len, c.range_ratio);
      turn.output_len = draw_length(rng, c.output_len, c.range_ratio);
      const int total = in_len + (random_prefix.empty() ? 0 : c.prefix_len);
      if (c.name == "repeat") {
        TALLY_ASSIGN_OR_RETURN(turn.text, repeated_text(tok, next_seed(), total, turn.text_len));
      } else {
        TALLY_ASSIGN_OR_RETURN(turn.text, text_of_length(tok, next_seed(), total, random_prefix,
                                                         turn.text_len));
      }
      if (turn.text_len != total) d.exact_lengths = false;
      if (!conv.system.empty()) turn.text_len += c.prefix_len;
      conv.turns.push_back(std::move(turn));
    }
    d.conversations.push_back(std::move(conv));
  }
  return d;
}

}  // namespace tally::loadgen
