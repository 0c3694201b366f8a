// A request as the scheduler sees it: tokens, limits and progress, no tensors, no sampling
// parameters and no stop rules (the engine keeps those by request id and decides when a
// sample ends; the scheduler frees its blocks).
//
// A request asks for n samples of one prompt. Each sample is a Sequence with its own output
// and its own progress counter. With n > 1 under continuous batching the prompt is computed
// once, by a short-lived "carrier" sequence; when the carrier reaches the prompt's end each
// sample is forked from it (sharing the prompt's blocks) and the carrier is freed. With n = 1
// (or under static batching) sample 0 computes the prompt itself and nothing is forked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/draft_length.h"

namespace tally {

using TokenId = int32_t;
using RequestId = int64_t;
inline constexpr SeqId kNoSeq = -1;

enum class FinishReason : uint8_t {
  kNone,    // still going
  kLength,  // max_tokens reached, or the context is full
  kStop,    // a stop token (kept as the last output token) or a stop string
  kAbort,   // abort_request()
};
std::string_view finish_reason_name(FinishReason reason);

enum class RequestStatus : uint8_t {
  kWaiting,    // queued, never admitted
  kRunning,    // admitted: holds blocks, scheduled every step the budget allows
  kPreempted,  // blocks taken back; queued again, its tokens to be recomputed
};
std::string_view request_status_name(RequestStatus status);

// What a caller submits: the scheduler's part of the engine's request (EngineRequest extends
// it), kept as given in Request::spec.
struct RequestSpec {
  RequestId id = 0;
  std::vector<TokenId> prompt;          // token ids (BOS included when the model wants one)
  int32_t max_tokens = 16;              // output tokens per sample (clipped to the context)
  int32_t n = 1;                        // parallel samples sharing the prompt's KV blocks
  int32_t priority = 0;                 // lower runs first
  std::string cache_salt;               // prefix cache: only requests with the same salt share
  // Benchmarks only (`bench throughput --replay-acceptance`): when speculation is on, sample
  // 0's drafts are taken from this recorded continuation instead of the n-gram source.
  std::vector<TokenId> replay_draft;
};

struct Sequence {
  SeqId id = kNoSeq;                  // KV sequence id, unique for the scheduler's life
  int32_t index = 0;                  // which sample (0..n-1); -1 for a carrier
  std::vector<TokenId> output;        // sampled so far (a carrier has none)
  std::vector<TokenId> draft;         // speculation: this step's draft (empty between steps)
  // Speculation: the source's full guess for this step (draft is its first k tokens), compared
  // with the tokens the step emits to update `acceptance` even where nothing was drafted.
  std::vector<TokenId> draft_guess;
  int32_t draft_len = 0;              // k the draft length rule gave it this step
  bool draft_by_model = false;        // this step's guess is the draft model's (placeholders)
  AcceptanceEstimate acceptance;        // of its n-gram guesses (and replayed ones)
  AcceptanceEstimate model_acceptance;  // of the draft model's drafts (learned when drafting)
  int32_t num_computed = 0;           // prompt + output tokens whose KV is stored
  FinishReason finish = FinishReason::kNone;

  bool live() const { return finish == FinishReason::kNone; }
};

struct Request {
  RequestSpec spec;
  int64_t arrival = 0;       // arrival order (ties)
  int64_t arrival_step = 0;  // scheduler step at arrival (aging)
  int64_t order_key = 0;     // smaller = more important; see Scheduler (aging)
  RequestStatus status = RequestStatus::kWaiting;
  std::vector<Sequence> samples;  // [n], fixed at arrival (pointers stay valid)
  Sequence carrier;               // n > 1, prompt stage only: id != kNoSeq while it exists
  int32_t n_live = 0;             // samples not finished
  int32_t n_preemptions = 0;
  bool abort_pending = false;     // abort_request() was called; freed at the next schedule()
  // Prefix cache: prompt tokens found cached at the first admission (-1 before it), and how
  // many more later arrivals may still be admitted before this request (aging; see Scheduler).
  int32_t num_cached_tokens = -1;
  int32_t overtake_allowance = 0;

  int32_t prompt_len() const { return static_cast<int32_t>(spec.prompt.size()); }
  bool in_carrier_stage() const { return carrier.id != kNoSeq; }
  // Tokens a sequence of this request knows: the prompt, then its outputs.
  int32_t known_tokens(const Sequence& s) const {
    return prompt_len() + static_cast<int32_t>(s.output.size());
  }
  TokenId token_at(const Sequence& s, int32_t pos) const {
    return pos < prompt_len() ? spec.prompt[pos] : s.output[pos - prompt_len()];
  }
};

}  // namespace tally
