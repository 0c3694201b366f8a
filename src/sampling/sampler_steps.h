// The steps a Sampler chains over a TokenCandidates buffer. Each one narrows, reorders or
// rescales the candidates, or selects one; none allocates after construction. Sampler
// (sampler.h) builds the chain from SamplingParams; tests drive the steps one by one.
// Every step keeps the order invariant documented in token_candidates.h.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sampling/rng.h"
#include "sampling/token_candidates.h"

namespace tally {

class SamplerStep {
 public:
  virtual ~SamplerStep() = default;
  virtual const char* name() const = 0;
  // history: the request's tokens so far (prompt + generated), oldest first.
  virtual void apply(TokenCandidates& c, std::span<const int32_t> history) = 0;
};

// Adds a bias per token; -inf bans it. Needs the candidates in id order (runs first).
class LogitBiasStep final : public SamplerStep {
 public:
  explicit LogitBiasStep(std::vector<std::pair<int32_t, float>> bias) : bias_(std::move(bias)) {}
  const char* name() const override { return "logit_bias"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

 private:
  std::vector<std::pair<int32_t, float>> bias_;  // {token, bias}, ids already validated
};

struct PenaltyOptions {
  float repetition = 1.0f;  // CTRL / llama.cpp: logit > 0 ? logit / r : logit * r
  float presence = 0.0f;    // OpenAI: logit -= presence once if the token occurs
  float frequency = 0.0f;   // OpenAI: logit -= frequency * occurrences
  int32_t last_n = 64;      // the window: the last last_n history tokens; -1 = all
};

// Penalises tokens of the last `last_n` history tokens: repetition first, then frequency
// and presence with the token's count in the window. History ids outside the vocabulary
// are skipped. O(window) per token with a preallocated count per vocabulary entry.
// Needs the candidates in id order (runs right after the bias).
class PenaltyStep final : public SamplerStep {
 public:
  PenaltyStep(const PenaltyOptions& options, int32_t n_vocab);
  const char* name() const override { return "penalties"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

 private:
  PenaltyOptions options_;
  std::vector<uint32_t> counts_;  // [n_vocab], all zero between calls
};

// Selects the highest logit, the lowest id among equal ones.
class GreedyStep final : public SamplerStep {
 public:
  const char* name() const override { return "greedy"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;
};

// Keeps the k best candidates (k >= 1), sorted, via sort_prefix (no full sort).
class TopKStep final : public SamplerStep {
 public:
  explicit TopKStep(int32_t k);
  const char* name() const override { return "top_k"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

 private:
  size_t k_;
};

// Nucleus: keeps the smallest best-first set whose probability (softmax of the current
// logits) reaches p, at least one token. Sorts only a growing prefix (64, 256, ...) until
// the running sum reaches p.
class TopPStep final : public SamplerStep {
 public:
  explicit TopPStep(float p) : p_(p) {}
  const char* name() const override { return "top_p"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

 private:
  float p_;
};

// Keeps tokens whose probability is at least min_p times the most likely one's, tested on
// logits as logit >= max_logit + ln(min_p). Keeps the candidates' order.
class MinPStep final : public SamplerStep {
 public:
  explicit MinPStep(float min_p);
  const char* name() const override { return "min_p"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

 private:
  float log_min_p_;
};

// Divides every logit by the temperature (> 0).
class TemperatureStep final : public SamplerStep {
 public:
  explicit TemperatureStep(float temperature);
  const char* name() const override { return "temperature"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;
  // The one division both this step and the logprobs use, so they agree bit for bit.
  static float scale(float logit, float temperature) { return logit / temperature; }

 private:
  float temperature_;
};

// Softmax over the candidates, then one draw u = rng.next_double() in [0, 1): selects the
// first candidate (in their current order) whose running weight sum exceeds u * total.
// Every call consumes exactly one RNG value, so the stream position equals the number of
// tokens drawn. If no logit is finite, selects the first candidate.
class DistStep final : public SamplerStep {
 public:
  explicit DistStep(uint64_t seed) : rng_(seed) {}
  const char* name() const override { return "dist"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;
  // One value of the same stream (speculation's acceptance and residual draws).
  double next_uniform() { return rng_.next_double(); }

 private:
  Xoshiro256 rng_;
};

struct TokenLogprob {
  int32_t token;
  float logprob;
};

// Records log-softmax statistics of the full candidate set at the moment it runs (after
// bias and penalties, before any truncation), with the logits divided by `temperature`
// (1 for greedy): the log-sum-exp and the n most likely tokens. Leaves the candidates as
// they are. logprob_of() then turns a logit that went through the same temperature into
// a log-probability of that distribution.
class LogprobsStep final : public SamplerStep {
 public:
  LogprobsStep(float temperature, int32_t top_n);
  const char* name() const override { return "logprobs"; }
  void apply(TokenCandidates& c, std::span<const int32_t> history) override;

  float logprob_of(float scaled_logit) const;
  // [top_n], most likely first, lower id first among equals.
  std::span<const TokenLogprob> top() const { return {top_.data(), top_count_}; }

 private:
  float temperature_;
  float max_scaled_ = 0.0f;  // max of logit / temperature
  double log_sum_ = 0.0;     // log sum exp(logit / temperature - max_scaled_)
  std::vector<TokenCandidate> heap_;  // [top_n] scratch, worst kept candidate in front
  std::vector<TokenLogprob> top_;     // [top_n], first top_count_ in use
  size_t top_count_ = 0;
};

}  // namespace tally
