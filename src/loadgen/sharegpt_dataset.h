// A ShareGPT-format JSON file as a workload, the way vLLM's bench serve reads it: a list of
// {"conversations": [{"from": ..., "value": ...}, ...]}; entries with fewer than two turns
// are skipped; the rest are shuffled by the seed; the first turn is the prompt and the second
// turn's length (or --sharegpt-output-len) the output length; prompts or outputs under 4
// tokens, prompts over 1024 tokens, prompt + output over 2048 (or the server's context) are
// skipped, until num_prompts are taken.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "loadgen/dataset.h"
#include "loadgen/prompt_tokenizer.h"

namespace tally::loadgen {

// The (prompt, reply) pairs of a ShareGPT file; a missing or malformed file is an error
// naming the file and the entry.
Result<std::vector<std::pair<std::string, std::string>>> load_sharegpt_pairs(
    const std::string& path);

struct SharegptConfig {
  int num_prompts = 1000;
  int output_len = 0;     // 0: the reply's own length
  int max_model_len = 0;  // 0: no limit beyond vLLM's 2048
  uint64_t seed = 0;
};

Result<Dataset> make_sharegpt_dataset(std::vector<std::pair<std::string, std::string>> pairs,
                                      const SharegptConfig& config, PromptTokenizer& tok);

}  // namespace tally::loadgen
