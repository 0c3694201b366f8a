// What the engine keeps per request besides the scheduler's view: the caller's callback, one
// sampler, detokenizer and stop-string matcher per sample (the stop strings themselves once), and the timestamps of its timing.
// Owned and touched by the engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_types.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "sampling/stop_matcher.h"
#include "tokenizer/streaming_detokenizer.h"

namespace tally {

using EngineClock = std::chrono::steady_clock;

struct SampleState {
  SampleState(const SamplingParams& params, int32_t n_vocab, const Tokenizer& tokenizer,
              std::shared_ptr<const StopSet> stops)
      : sampler(params, n_vocab),
        detok(tokenizer),
        stop(std::move(stops)),
        temperature(params.temperature),
        draft_rng(sampler.seed() ^ 0x9e3779b97f4a7c15ull) {}

  Sampler sampler;
  StreamingDetokenizer detok;
  StopMatcher stop;
  int32_t n_generated = 0;  // tokens sampled, a final stop token included
  bool done = false;        // its kFinished went out
  int32_t spec_draft_tokens = 0;     // speculation: draft tokens proposed for it
  int32_t spec_accepted_tokens = 0;  // and accepted
  // Draft-model speculation: a sampled request's drafts are drawn from softmax(draft logits /
  // temperature) with their own stream (the sampler's draws stay the verification's).
  float temperature = 0.0f;
  Xoshiro256 draft_rng;
};

struct RequestState {
  RequestId id = 0;
  EngineEventCallback on_event;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens the prefix cache served at first admission
  int32_t max_tokens = 0;
  int32_t min_tokens = 0;
  bool ignore_eos = false;
  bool logprobs = false;
  bool want_text = true;  // detokenize, or stop strings to match
  bool send_text = true;  // detokenize: text goes into the events
  std::shared_ptr<const StopSet> stops;  // one copy shared by the samples' matchers
  std::vector<SampleState> samples;  // [n]
  int32_t n_live = 0;                // samples without a kFinished yet
  bool failed = false;               // ended with kError: nothing more goes out
  EngineClock::time_point arrival;
  EngineClock::time_point first_scheduled;
  EngineClock::time_point first_token;
  bool scheduled = false;
  bool has_token = false;

  // Builds the samplers: sample i draws with engine_sample_seed(seed, i).
  static RequestState make(RequestId id, const EngineRequest& request, uint64_t seed,
                           EngineEventCallback on_event, const Tokenizer& tokenizer,
                           int32_t n_vocab, EngineClock::time_point arrival);
  RequestTiming timing(EngineClock::time_point now) const;
};

}  // namespace tally
