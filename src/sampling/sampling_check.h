// SamplingParams::validate with the field at fault as a value: an API layer maps `field` to
// its own parameter name (OpenAI's `param`) without reading the message.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "sampling/sampling_params.h"

namespace tally {

struct SamplingCheck {
  Status status;           // ok, or what is wrong and why
  std::string_view field;  // the SamplingParams field at fault ("top_p", "logit_bias", ...)
};

SamplingCheck check_sampling_params(const SamplingParams& p, int32_t n_vocab);

}  // namespace tally
