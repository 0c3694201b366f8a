// The workloads of tally bench serve, all seeded (the same seed and server tokenizer give the
// same prompts): `random` (uniform input/output lengths around the asked ones, an optional
// shared prefix), `shared-prefix` (a long common system prompt per group + varied questions:
// for prefix caching), `multi-turn` (conversations whose every turn resends the history),
// `repeat` (a random passage said three times: copy-heavy, for speculation), and
// ShareGPT files (sharegpt_dataset.h). Prompt lengths are made exact with the server's
// tokenizer when it has one (prompt_tokenizer.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/prompt_tokenizer.h"

namespace tally::loadgen {

struct DatasetTurn {
  std::string text;    // the user's new text
  int text_len = 0;    // its tokens (with the system text, when there is one), as measured
  int output_len = 0;  // max_tokens of this turn
};

struct Conversation {
  std::string system;              // shared-prefix: the group's common system prompt ("" otherwise)
  std::vector<DatasetTurn> turns;  // one unless multi-turn
};

struct Dataset {
  std::string name;
  std::vector<Conversation> conversations;
  std::string tokenizer;           // PromptTokenizer::description()
  bool exact_lengths = false;      // every measured length equals the asked one
  std::vector<std::string> notes;  // shown in the report (a short ShareGPT file, ...)
  int n_requests() const;
};

struct SyntheticConfig {
  std::string name = "random";  // random | shared-prefix | multi-turn | repeat
  int num_prompts = 1000;       // requests (multi-turn: turns in all)
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;  // lengths uniform in [len * (1 - r), len * (1 + r)]
  int prefix_len = 0;        // random: shared prefix tokens; shared-prefix: system prompt
  int prefix_groups = 1;     // shared-prefix: distinct system prompts
  int turns = 3;             // multi-turn: turns per conversation
  uint64_t seed = 0;
};

Result<Dataset> make_synthetic_dataset(const SyntheticConfig& config, PromptTokenizer& tok);

// Text whose tokens (after `prefix`, which is part of the count) number `n_tokens`,
// drawn from the word list; `measured` gets the count reached (== n_tokens unless the
// tokenizer would not round-trip).
Result<std::string> text_of_length(PromptTokenizer& tok, uint64_t seed, int n_tokens,
                                   const std::string& prefix, int& measured);

}  // namespace tally::loadgen
