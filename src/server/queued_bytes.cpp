#include "server/queued_bytes.h"

namespace tally::server {

int64_t queued_request_bytes(const QueuedRequestShape& s) {
  constexpr int64_t kPerSampleFixed = 1 << 10;
  constexpr int64_t kPerRequestFixed = 4 << 10;
  const int64_t n = s.n;
  const int64_t prompt = s.prompt_tokens * 8;
  const int64_t samplers = n * (int64_t{s.n_vocab} * 16 + kPerSampleFixed);
  const int64_t bias = n * s.logit_bias_entries * 8;
  const int64_t stops = s.stop_bytes * (2 + 16 + n);
  return prompt + samplers + bias + stops + kPerRequestFixed;
}

}  // namespace tally::server
