#include "sampling/sampling_defaults.h"

#include <fmt/format.h>

namespace tally {

bool SamplingDefaults::empty() const {
  return !temperature && !top_k && !top_p && !min_p && !repetition_penalty && !penalty_last_n;
}

void SamplingDefaults::apply_to(SamplingParams& p) const {
  if (temperature) p.temperature = *temperature;
  if (top_k) p.top_k = *top_k;
  if (top_p) p.top_p = *top_p;
  if (min_p) p.min_p = *min_p;
  if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  if (penalty_last_n) p.penalty_last_n = *penalty_last_n;
}

std::string SamplingDefaults::describe() const {
  std::string s;
  auto add = [&s](const char* name, const auto& v) {
    if (!v) return;
    if (!s.empty()) s += ", ";
    s += fmt::format("{} {}", name, *v);
  };
  add("temperature", temperature);
  add("top_k", top_k);
  add("top_p", top_p);
  add("min_p", min_p);
  add("repetition_penalty", repetition_penalty);
  add("penalty_last_n", penalty_last_n);
  return s;
}

Status SamplingDefaults::validate() const {
  // The same ranges as a request's: checked by the one rule, on a copy that takes them.
  SamplingParams p;
  apply_to(p);
  return p.validate(/*n_vocab=*/1);
}

}  // namespace tally
