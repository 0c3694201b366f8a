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

int32_t ngram_draft(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                    std::span<int32_t> draft) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  const int64_t longest = std::min<int64_t>(ngram_max, len - 1);
  if (draft.empty() || longest < ngram_min) return 0;
  // One backward pass over where an earlier occurrence of the suffix could end (e, before
  // the last token): its match length there, keeping the latest end of the longest. Every
  // step of every decoding sequence calls this, mostly without a match: one comparison per
  // token, where a pass per suffix length n compared each position once per n.
  const int32_t* t = tokens.data();
  const int32_t last = t[len - 1];
  int64_t best_n = 0;
  int64_t best_end = -1;
  for (int64_t e = len - 2; e >= 0 && best_n < longest; --e) {
    if (t[e] != last) continue;
    const int64_t most = std::min(longest, e + 1);
    int64_t n = 1;
    while (n < most && t[e - n] == t[len - 1 - n]) ++n;
    if (n > best_n) {
      best_n = n;
      best_end = e;
    }
  }
  if (best_n < ngram_min) return 0;
  // The continuation runs from the match's end; past the last known token it goes on copying
  // what it has just proposed (an overlapping copy, as in LZ77), so a run with a short period
  // is drafted to the full length instead of one period.
  const int64_t from = best_end + 1;
  const auto k = static_cast<int64_t>(draft.size());
  for (int64_t j = 0; j < k; ++j) {
    const int64_t at = from + j;
    draft[static_cast<size_t>(j)] =
        at < len ? tokens[static_cast<size_t>(at)] : draft[static_cast<size_t>(at - len)];
  }
  return static_cast<int32_t>(k);
}

}  // namespace tally
