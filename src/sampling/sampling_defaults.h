// A model's own default sampling (Hugging Face generation_config.json, GGUF general.sampling.*):
// each parameter the model names, absent where it names none. Applied under what a request or a
// CLI flag sets explicitly and over the caller's own defaults (vLLM's `--generation-config auto`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sampling/sampling_params.h"

namespace tally {

struct SamplingDefaults {
  std::optional<float> temperature;
  std::optional<int32_t> top_k;
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<int32_t> penalty_last_n;

  bool empty() const;
  // Overwrites the fields of `p` this names; leaves the others.
  void apply_to(SamplingParams& p) const;
  // "temperature 0.6, top_k 20, top_p 0.95" ("" when empty), for the start-up log.
  std::string describe() const;
  // InvalidArgument naming the field for a value SamplingParams::validate would refuse.
  Status validate() const;
};

}  // namespace tally
