#include "loadgen/request_record.h"

namespace tally::loadgen {

std::vector<double> RequestRecord::itl_s() const {
  std::vector<double> gaps;
  for (size_t i = 1; i < chunk_s.size(); ++i) gaps.push_back(chunk_s[i] - chunk_s[i - 1]);
  return gaps;
}

double RequestRecord::tpot_s() const {
  if (output_tokens < 2) return 0.0;
  return (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1);
}

}  // namespace tally::loadgen
