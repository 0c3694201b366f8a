// SamplingParams::validate: each error names the field at fault as a value (Status::field),
// so an API layer maps it to its own parameter name without reading the message.
#include "sampling/sampling_params.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tally {
namespace {

Status out_of_range(std::string_view field, double value, const char* range) {
  return make_error(ErrorCode::kInvalidArgument, "sampling: {} = {} is out of range {}", field,
                    value, range)
      .with_field(field);
}

Status validate_logit_bias(const SamplingParams& p, int32_t n_vocab) {
  std::vector<int32_t> banned;
  for (size_t i = 0; i < p.logit_bias.size(); ++i) {
    const auto [token, bias] = p.logit_bias[i];
    if (token < 0 || token >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "sampling: logit_bias[{}] token {} is outside the vocabulary [0, {})", i,
                        token, n_vocab);
    }
    // +inf would make softmax NaN; -inf is the documented way to ban a token.
    if (std::isnan(bias) || bias == INFINITY) {
      return make_error(ErrorCode::kInvalidArgument,
                        "sampling: logit_bias[{}] for token {} is {} (must be finite or -inf)",
                        i, token, bias);
    }
    if (bias == -INFINITY) banned.push_back(token);
  }
  std::sort(banned.begin(), banned.end());
  banned.erase(std::unique(banned.begin(), banned.end()), banned.end());
  if (static_cast<int64_t>(banned.size()) == n_vocab) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampling: logit_bias bans all {} tokens of the vocabulary", n_vocab);
  }
  return {};
}

}  // namespace

Status SamplingParams::validate(int32_t n_vocab) const {
  const SamplingParams& p = *this;
  if (n_vocab <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "sampling: n_vocab = {} must be positive",
                      n_vocab);
  }
  if (!(std::isfinite(p.temperature) && p.temperature >= 0.0f)) {
    return out_of_range("temperature", p.temperature, "[0, inf)");
  }
  if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) return out_of_range("top_p", p.top_p, "[0, 1]");
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return out_of_range("min_p", p.min_p, "[0, 1]");
  if (!(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0.0f)) {
    return out_of_range("repetition_penalty", p.repetition_penalty, "(0, inf)");
  }
  if (p.penalty_last_n < -1) {
    return out_of_range("penalty_last_n", p.penalty_last_n, "[-1, inf)");
  }
  if (!std::isfinite(p.presence_penalty)) {
    return out_of_range("presence_penalty", p.presence_penalty, "(-inf, inf)");
  }
  if (!std::isfinite(p.frequency_penalty)) {
    return out_of_range("frequency_penalty", p.frequency_penalty, "(-inf, inf)");
  }
  if (p.top_logprobs < 0 || p.top_logprobs > n_vocab) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampling: top_logprobs = {} is out of range [0, n_vocab = {}]",
                      p.top_logprobs, n_vocab)
        .with_field("top_logprobs");
  }
  if (p.top_logprobs > 0 && !p.logprobs) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampling: top_logprobs = {} needs logprobs = true", p.top_logprobs)
        .with_field("top_logprobs");
  }
  return validate_logit_bias(p, n_vocab).with_field("logit_bias");
}

}  // namespace tally
