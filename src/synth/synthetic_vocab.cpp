#include "synth/synthetic_vocab.h"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace tally::synth {

namespace {

constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kScores = "tokenizer.ggml.scores";
constexpr std::string_view kTypes = "tokenizer.ggml.token_type";

Status check_length(const io::GgufFile& vocab, std::string_view key, size_t got, size_t n_tokens) {
  if (got == n_tokens) return Status::ok_status();
  return make_error(ErrorCode::kFormat, "{}: '{}' has {} entries but there are {} tokens", vocab.name(), key, got,
                    n_tokens);
}

// Writes one per-token array, padded; other keys are copied verbatim.
Status copy_padded(const io::GgufFile& vocab, std::string_view key, size_t n_tokens, int64_t n_vocab,
                   const std::vector<std::string>& added, io::GgufWriter& out) {
  const size_t n = static_cast<size_t>(n_vocab);
  if (key == kTokens) {
    TALLY_ASSIGN_OR_RETURN(const auto views, vocab.get_string_array(key));
    std::vector<std::string> tokens(views.begin(), views.end());
    const size_t first = tokens.size();
    for (size_t id = first; id < n; ++id)
      tokens.push_back(id - first < added.size() ? added[id - first] : fmt::format("<|tally_placeholder_{}|>", id));
    out.set_string_array(std::string(key), std::move(tokens));
  } else if (key == kScores) {
    TALLY_ASSIGN_OR_RETURN(std::vector<float> scores, vocab.get_f32_array(key));
    TALLY_RETURN_IF_ERROR(check_length(vocab, key, scores.size(), n_tokens));
    scores.resize(n, 0.0f);
    out.set_f32_array(std::string(key), std::move(scores));
  } else {
    TALLY_ASSIGN_OR_RETURN(const std::vector<int64_t> types, vocab.get_int_array(key));
    TALLY_RETURN_IF_ERROR(check_length(vocab, key, types.size(), n_tokens));
    std::vector<int32_t> padded(types.begin(), types.end());
    padded.resize(n, kTokenTypeControl);
    out.set_i32_array(std::string(key), std::move(padded));
  }
  return Status::ok_status();
}

}  // namespace

Result<VocabCopy> copy_tokenizer_metadata(const io::GgufFile& vocab, int64_t n_vocab, io::GgufWriter& out,
                                          const std::vector<std::string>& added) {
  TALLY_ASSIGN_OR_RETURN(const auto tokens, vocab.get_string_array(kTokens));
  VocabCopy copy;
  copy.n_file_tokens = static_cast<int64_t>(tokens.size());
  if (copy.n_file_tokens > n_vocab) {
    return make_error(ErrorCode::kInvalidArgument, "{}: {} tokens do not fit a vocabulary of {}", vocab.name(),
                      copy.n_file_tokens, n_vocab);
  }
  copy.n_placeholders = n_vocab - copy.n_file_tokens;
  for (const auto& [key, value] : vocab.metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    if (key == kTokens || key == kScores || key == kTypes) {
      TALLY_RETURN_IF_ERROR(copy_padded(vocab, key, tokens.size(), n_vocab, added, out));
    } else {
      out.set_value(std::string(key), value);
    }
  }
  return copy;
}

}  // namespace tally::synth
