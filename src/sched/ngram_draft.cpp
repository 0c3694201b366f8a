#include "sched/ngram_draft.h"

#include <algorithm>

namespace tally {

Result<SpecMode> spec_mode_from_name(std::string_view name) {
  if (name == "off") return SpecMode::kOff;
  if (name == "ngram") return SpecMode::kNgram;
  if (name == "auto") return SpecMode::kAuto;
  if (name == "draft") return SpecMode::kDraft;
  return make_error(ErrorCode::kInvalidArgument,
                    "--speculative must be off, ngram, draft or auto, got '{}'", name);
}

std::string_view spec_mode_name(SpecMode mode) {
  switch (mode) {
    case SpecMode::kOff: return "off";
    case SpecMode::kNgram: return "ngram";
    case SpecMode::kAuto: return "auto";
    case SpecMode::kDraft: return "draft";
  }
  return "?";
}

Result<DraftLengthRule> draft_length_rule_from_name(std::string_view name) {
  if (name == "adaptive") return DraftLengthRule::kAdaptive;
  if (name == "fixed") return DraftLengthRule::kFixed;
  return make_error(ErrorCode::kInvalidArgument,
                    "--draft-length must be adaptive or fixed, got '{}'", name);
}

Result<SpecSampledVerify> spec_sampled_verify_from_name(std::string_view name) {
  if (name == "token") return SpecSampledVerify::kToken;
  if (name == "q") return SpecSampledVerify::kQ;
  return make_error(ErrorCode::kInvalidArgument,
                    "--spec-sampled-verify must be token or q, got '{}'", name);
}

std::string_view spec_sampled_verify_name(SpecSampledVerify rule) {
  return rule == SpecSampledVerify::kQ ? "q" : "token";
}

Status SpecConfig::validate() const {
  if (ngram_min < 1 || ngram_max < ngram_min) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative: need 1 <= ngram_min <= ngram_max, got {} and {}", ngram_min,
                      ngram_max);
  }
  if (num_speculative_tokens < 0 || num_speculative_tokens > kMaxSpeculativeTokens) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative: num_speculative_tokens is {} (must be in [0, {}])",
                      num_speculative_tokens, kMaxSpeculativeTokens);
  }
  if (mode == SpecMode::kDraft && draft_model_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative: --speculative draft needs --draft-model SMALL.gguf");
  }
  if (mode != SpecMode::kDraft && mode != SpecMode::kAuto && !draft_model_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "speculative: --draft-model needs --speculative draft (or auto)");
  }
  return Status::ok_status();
}

namespace {

// The start of the latest occurrence of tokens' last n tokens that ends before the last
// token, or -1.
int64_t ngram_latest_match(std::span<const int32_t> tokens, int64_t n) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  const int32_t* suffix = tokens.data() + (len - n);
  for (int64_t start = len - n - 1; start >= 0; --start) {
    if (std::equal(suffix, suffix + n, tokens.data() + start)) return start;
  }
  return -1;
}

}  // namespace

int32_t ngram_draft(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                    std::span<int32_t> draft) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (draft.empty()) return 0;
  for (int64_t n = std::min<int64_t>(ngram_max, len - 1); n >= ngram_min; --n) {
    const int64_t start = ngram_latest_match(tokens, n);
    if (start < 0) continue;
    // The continuation runs from the match's end; past the last known token it goes on
    // copying what it has just proposed (an overlapping copy, as in LZ77), so a run with a
    // short period is drafted to the full length instead of one period.
    const int64_t from = start + n;
    const auto k = static_cast<int64_t>(draft.size());
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = from + j;
      draft[static_cast<size_t>(j)] =
          at < len ? tokens[static_cast<size_t>(at)] : draft[static_cast<size_t>(at - len)];
    }
    return static_cast<int32_t>(k);
  }
  return 0;
}

}  // namespace tally
