// Every check an EngineRequest gets, in one place: what the scheduler judges (prompt length
// against the context, max_tokens, n, KV room: Scheduler::check_request), then what needs the
// model (prompt token ids in the vocabulary, sampling parameters) and the engine's own rules
// (min_tokens, stop strings). EngineCore runs it at submission; an API layer runs it (through
// Engine::check_request) before it takes any resource, and maps Status::field() to its own
// parameter names. Errors: InvalidArgument, or OutOfRange for a prompt that leaves no room in
// the context; each names the EngineRequest field at fault (Status::field).
// Inline (and built only from sched/ and sampling/) so that the server, which links no engine,
// and its tests' fake engine judge requests by these same rules.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "engine/engine_types.h"
#include "sampling/stop_set.h"
#include "sched/scheduler.h"

namespace tally {

inline Status check_engine_request(const EngineRequest& r, const SchedulerConfig& scheduler,
                                   int32_t n_vocab) {
  TALLY_RETURN_IF_ERROR(Scheduler::check_request(scheduler, r));
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt token {} is {}, outside the vocabulary [0, {})", i, r.prompt[i],
                        n_vocab)
          .with_field("prompt");
    }
  }
  if (r.min_tokens < 0) {
    return make_error(ErrorCode::kInvalidArgument, "min_tokens is {} (must be >= 0)", r.min_tokens)
        .with_field("min_tokens");
  }
  if (r.min_tokens > r.max_tokens) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'min_tokens' ({}) must not exceed max_tokens ({})", r.min_tokens,
                      r.max_tokens)
        .with_field("min_tokens");
  }
  TALLY_RETURN_IF_ERROR(r.sampling.validate(n_vocab));  // names its own field
  if (Status st = StopSet::validate(r.stop); !st.ok()) return st.with_field("stop");
  return Status::ok_status();
}

}  // namespace tally
