// The memory one request holds while it waits for the engine, as --max-queued-bytes counts
// it. The engine builds a request's samplers, stop matchers and prompt copy when it takes the
// request in, long before it runs; the queue's request count (--max-queue) alone would let
// 1024 requests of n=16 on a 128k vocabulary take 32 GiB. So each request is charged, at
// admission, an upper bound of what it allocates (per engine request, i.e. per prompt):
//
//   prompt_tokens * 8                       the token ids: the job's copy and the engine's
//   + n * (n_vocab * 16 + 1 KiB)            per sample: candidates (12 B a vocabulary entry)
//                                           and penalty counts (4 B), the sampler's steps
//   + n * logit_bias_entries * 8            each sample's logit-bias step holds its copy
//   + stop_bytes * (2 + 16 + n)             the stop strings (request + engine copies), their
//                                           automaton (~16 B a byte), each sample's hold-back
//   + 4 KiB                                 request state, callbacks, events in flight
//
// The charge is returned when the engine request produces its first event (it is running:
// running requests are bounded by --max-seqs and counted in the engine's ledger) or ends.
#pragma once

#include <cstdint>

namespace tally::server {

struct QueuedRequestShape {
  int64_t prompt_tokens = 0;
  int32_t n = 1;
  int32_t n_vocab = 0;
  int64_t logit_bias_entries = 0;
  int64_t stop_bytes = 0;
};

int64_t queued_request_bytes(const QueuedRequestShape& shape);

}  // namespace tally::server
