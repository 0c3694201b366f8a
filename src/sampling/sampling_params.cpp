#include "sampling/sampling_params.h"

#include <algorithm>
#include <cmath>

namespace tally {
namespace {

Status out_of_range(const char* field, double value, const char* range) {
  return make_error(ErrorCode::kInvalidArgument, "sampling: {} = {} is out of range {}", field,
                    value, range);
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
  if (n_vocab <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "sampling: n_vocab = {} must be positive",
                      n_vocab);
  }
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    return out_of_range("temperature", temperature, "[0, inf)");
  }
  if (!(top_p >= 0.0f && top_p <= 1.0f)) return out_of_range("top_p", top_p, "[0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return out_of_range("min_p", min_p, "[0, 1]");
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return out_of_range("repetition_penalty", repetition_penalty, "(0, inf)");
  }
  if (penalty_last_n < -1) return out_of_range("penalty_last_n", penalty_last_n, "[-1, inf)");
  if (!std::isfinite(presence_penalty)) {
    return out_of_range("presence_penalty", presence_penalty, "(-inf, inf)");
  }
  if (!std::isfinite(frequency_penalty)) {
    return out_of_range("frequency_penalty", frequency_penalty, "(-inf, inf)");
  }
  if (top_logprobs < 0 || top_logprobs > n_vocab) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampling: top_logprobs = {} is out of range [0, n_vocab = {}]",
                      top_logprobs, n_vocab);
  }
  if (top_logprobs > 0 && !logprobs) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampling: top_logprobs = {} needs logprobs = true", top_logprobs);
  }
  return validate_logit_bias(*this, n_vocab);
}

}  // namespace tally
