#include "loadgen/sharegpt_dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loadgen/rng.h"

namespace tally::loadgen {

using Json = nlohmann::json;

Result<std::vector<std::pair<std::string, std::string>>> load_sharegpt_pairs(
    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "--dataset-path '{}': cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  const Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return make_error(ErrorCode::kFormat, "--dataset-path '{}': not valid JSON", path);
  }
  if (!j.is_array()) {
    return make_error(ErrorCode::kFormat, "--dataset-path '{}': expected a JSON list of entries",
                      path);
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    const Json* conv = e.is_object() && e.contains("conversations") ? &e["conversations"] : nullptr;
    if (!conv || !conv->is_array()) {
      return make_error(ErrorCode::kFormat,
                        "--dataset-path '{}': entry {} has no 'conversations' list", path, i);
    }
    if (conv->size() < 2) continue;
    std::string texts[2];
    for (size_t t = 0; t < 2; ++t) {
      const Json& turn = (*conv)[t];
      if (!turn.is_object() || !turn.contains("value") || !turn["value"].is_string()) {
        return make_error(ErrorCode::kFormat,
                          "--dataset-path '{}': entry {} turn {} has no string 'value'", path, i,
                          t);
      }
      texts[t] = turn["value"].get<std::string>();
    }
    pairs.emplace_back(std::move(texts[0]), std::move(texts[1]));
  }
  return pairs;
}

Result<Dataset> make_sharegpt_dataset(std::vector<std::pair<std::string, std::string>> pairs,
                                      const SharegptConfig& c, PromptTokenizer& tok) {
  Dataset d;
  d.name = "sharegpt";
  d.tokenizer = tok.description();
  d.exact_lengths = tok.exact();
  Rng rng(c.seed);
  for (size_t i = pairs.size(); i > 1; --i) {  // Fisher-Yates
    std::swap(pairs[i - 1],
              pairs[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i) - 1))]);
  }
  const int max_total = c.max_model_len > 0 ? std::min(2048, c.max_model_len) : 2048;
  int skipped = 0;
  for (const auto& [prompt, reply] : pairs) {
    if (static_cast<int>(d.conversations.size()) >= c.num_prompts) break;
    TALLY_ASSIGN_OR_RETURN(auto prompt_ids, tok.encode(prompt));
    int out_len = c.output_len;
    if (out_len <= 0) {
      TALLY_ASSIGN_OR_RETURN(auto reply_ids, tok.encode(reply));
      out_len = static_cast<int>(reply_ids.size());
    }
    const int in_len = static_cast<int>(prompt_ids.size());
    const bool too_short = in_len < 4 || (c.output_len <= 0 && out_len < 4);
    if (too_short || in_len > 1024 || in_len + out_len > max_total) {
      ++skipped;
      continue;
    }
    Conversation conv;
    conv.turns.push_back({prompt, in_len, out_len});
    d.conversations.push_back(std::move(conv));
  }
  if (skipped > 0) {
    d.notes.push_back(fmt::format("sharegpt: {} entries skipped (too short or too long)", skipped));
  }
  if (static_cast<int>(d.conversations.size()) < c.num_prompts) {
    d.notes.push_back(fmt::format("sharegpt: only {} of the {} prompts asked for",
                                  d.conversations.size(), c.num_prompts));
  }
  if (d.conversations.empty()) {
    return make_error(ErrorCode::kFormat, "the ShareGPT file has no usable entry ({} skipped)",
                      skipped);
  }
  return d;
}

}  // namespace tally::loadgen
