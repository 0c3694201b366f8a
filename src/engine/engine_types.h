// What crosses the engine's boundary: requests in, events out, metrics and the memory ledger.
// Plain data only, so the server (src/server) depends on these types and never on tensors.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/sampler_steps.h"
#include "sampling/sampling_params.h"
#include "sched/ngram_draft.h"
#include "sched/request.h"
#include "kv/kv_offload.h"
#include "tensor/kv_types.h"

namespace tally {

// The seed sample `index` of a request draws with: the request's seed itself for sample 0,
// a splitmix64 mix of (seed, index) for the others. So sample i of an n > 1 request produces
// what an n = 1 request with seed engine_sample_seed(seed, i) produces. Never kRandomSeed.
uint64_t engine_sample_seed(uint64_t seed, int32_t index);

// The one request type from the API layer to the scheduler. Its RequestSpec part (prompt,
// max_tokens, n, priority, cache_salt, replay_draft) is what the scheduler keeps: EngineCore
// moves it, unchanged, into the scheduler's Request; the rest is the engine's (sampling and
// stop rules, kept per request in RequestState). `id` is assigned by the engine (Engine::submit,
// EngineCore::add_request), whatever the caller put there. Every check it gets is
// check_engine_request (engine/request_check.h).
struct EngineRequest : RequestSpec {
  SamplingParams sampling;       // seed kRandomSeed = drawn per request
  int32_t min_tokens = 0;        // end-of-generation tokens are ignored before this many
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings (OpenAI semantics: not included in text)
  bool detokenize = true;         // produce text deltas (UTF-8 safe)
};

enum class EngineEventKind : uint8_t {
  kToken,     // one sampled token of one sample (text may be empty while UTF-8 is incomplete)
  kFinished,  // one sample ended (finish reason set); the last kFinished has request_done
  kError,     // the request failed (status set); nothing else follows for it
};

// TokenLogprob {token, logprob} is the sampler's own (sampling/sampler_steps.h).

struct RequestTiming {
  double queue_seconds = 0;    // arrival -> first scheduled
  double prefill_seconds = 0;  // first scheduled -> first token
  double ttft_seconds = 0;     // arrival -> first token
  double decode_seconds = 0;   // first token -> finish
  double e2e_seconds = 0;      // arrival -> finish
};

struct EngineEvent {
  EngineEventKind kind = EngineEventKind::kToken;
  RequestId request_id = 0;
  int32_t index = 0;          // which sample (0..n-1)
  int32_t token = -1;         // kToken; kFinished by a stop token (EOS...): that token, which
                              // is not sent as a kToken (it has no text) but is counted in
                              // completion_tokens
  std::string text;           // kToken: text this token completes (stop strings removed);
                              // kFinished: text held back until the end (an unfinished
                              // character or a partial stop string), usually empty
  std::optional<float> logprob;            // when the request asked for logprobs
  std::vector<TokenLogprob> top_logprobs;  // when asked
  FinishReason finish = FinishReason::kNone;  // kFinished: kStop, kLength, kAbort
  std::string stop_string;    // kFinished by a stop string: which one
  bool request_done = false;  // the request's last event
  int32_t prompt_tokens = 0;  // usage, on kFinished
  int32_t cached_tokens = 0;  // of prompt_tokens, served by the prefix cache (not computed)
  int32_t completion_tokens = 0;
  // Speculation, on kFinished: this sample's draft tokens proposed and accepted (accepted /
  // proposed is its acceptance rate).
  int32_t spec_draft_tokens = 0;
  int32_t spec_accepted_tokens = 0;
  RequestTiming timing;       // on kFinished
  Status status;              // kError
};

// Speculative decoding, vLLM's counters: drafts verified (one per sequence and step that had
// a draft), draft tokens proposed, draft tokens accepted, and accepted per draft position.
struct SpecDecodeCounters {
  int64_t drafts = 0;
  int64_t draft_tokens = 0;
  int64_t accepted_tokens = 0;
  std::array<int64_t, kMaxSpeculativeTokens> accepted_per_pos{};
};

// A snapshot of the engine's counters for /metrics and benchmarks.
struct EngineMetrics {
  int32_t num_requests_running = 0;
  int32_t num_requests_waiting = 0;
  double kv_cache_usage = 0;   // used blocks / blocks, 0..1
  int64_t num_preemptions_total = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t steps_total = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_free = 0;
  double kv_utilization = 0;   // tokens stored / slots in used blocks, averaged over steps
  // Prefix cache, in tokens, counted at each admission: looked up and found cached.
  int64_t prefix_cache_queries_total = 0;
  int64_t prefix_cache_hits_total = 0;
  KvOffloadStats kv_offload;   // the offload tiers' counters, per tier (zero without tiers)
  // Speculation: positions in use (num_speculative_tokens; 0 when off) and the counters.
  int32_t spec_positions = 0;
  SpecDecodeCounters spec_decode;
};

// Every allocation the engine made, by kind (what `tally plan` predicts).
struct MemoryLedger {
  int64_t weight_bytes_mapped = 0;    // views into the GGUF mmap
  int64_t weight_bytes_owned = 0;     // converted or repacked copies
  int64_t activation_bytes = 0;       // ForwardScratch + logits
  int64_t kv_bytes = 0;               // the KV pool
  int64_t kv_blocks = 0;
  int64_t block_size = 0;
  int64_t token_capacity = 0;         // kv_blocks * block_size
  int64_t kv_bytes_per_token = 0;
  KvTypes kv_type = DType::kF16;      // storage types of K and V
  int64_t other_bytes = 0;            // sampler buffers, tables, ...
  // --speculative draft: the draft model's weights, its KV storage (the target's block count)
  // and its buffers.
  int64_t draft_weight_bytes = 0;
  int64_t draft_kv_bytes = 0;
  int64_t draft_buffer_bytes = 0;
  int64_t draft_bytes() const { return draft_weight_bytes + draft_kv_bytes + draft_buffer_bytes; }
  int64_t kv_offload_bytes = 0;       // the host offload tier's whole blocks (at most)
  int64_t total() const {
    return weight_bytes_mapped + weight_bytes_owned + activation_bytes + kv_bytes + other_bytes +
           draft_bytes() + kv_offload_bytes;
  }
};

}  // namespace tally
