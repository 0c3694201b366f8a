#include "engine/request_state.h"

#include "sampling/rng.h"

namespace tally {

namespace {

double seconds(EngineClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

uint64_t engine_sample_seed(uint64_t seed, int32_t index) {
  if (index == 0) return seed;
  SplitMix64 mix(seed ^ (static_cast<uint64_t>(index) * 0xd1b54a32d192ed03ull));
  const uint64_t s = mix.next();
  return s == kRandomSeed ? 0 : s;
}

RequestState RequestState::make(RequestId id, const EngineRequest& request, uint64_t seed,
                                EngineEventCallback on_event, const Tokenizer& tokenizer,
                                int32_t n_vocab, EngineClock::time_point arrival) {
  RequestState r;
  r.id = id;
  r.on_event = std::move(on_event);
  r.prompt_tokens = static_cast<int32_t>(request.prompt.size());
  r.max_tokens = request.max_tokens;
  r.min_tokens = request.min_tokens;
  r.ignore_eos = request.ignore_eos;
  r.logprobs = request.sampling.logprobs;
  r.send_text = request.detokenize;
  r.want_text = request.detokenize || !request.stop.empty();
  r.stops = std::make_shared<const StopSet>(request.stop);
  r.arrival = arrival;
  r.samples.reserve(static_cast<size_t>(request.n));
  for (int32_t i = 0; i < request.n; ++i) {
    SamplingParams p = request.sampling;
    p.seed = engine_sample_seed(seed, i);
    SampleState& s = r.samples.emplace_back(p, n_vocab, tokenizer, r.stops);
    // The text continues the prompt: right after BOS the detokenizer drops SentencePiece's
    // leading space, as `tally generate` has always printed (BOS itself has no text).
    if (!request.prompt.empty() && request.prompt.back() == tokenizer.bos()) {
      (void)s.detok.push(request.prompt.back());
    }
  }
  r.n_live = request.n;
  return r;
}

RequestTiming RequestState::timing(EngineClock::time_point now) const {
  RequestTiming t;
  t.e2e_seconds = seconds(now - arrival);
  if (scheduled) t.queue_seconds = seconds(first_scheduled - arrival);
  if (has_token) {
    t.ttft_seconds = seconds(first_token - arrival);
    t.prefill_seconds = scheduled ? seconds(first_token - first_scheduled) : 0.0;
    t.decode_seconds = seconds(now - first_token);
  }
  return t;
}

}  // namespace tally
