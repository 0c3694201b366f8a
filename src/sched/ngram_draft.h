// Prompt-lookup ("n-gram") drafts for speculative decoding: the continuation of the longest,
// then most recent, earlier occurrence of the sequence's last n tokens (n from ngram_max down
// to ngram_min) in its own tokens (prompt + outputs). No weights, no state: strong wherever
// the answer repeats its context (summaries, code edits, RAG answers, repetitive text).
//
// Cost: one pass over the tokens (a comparison per token, a few more where the last token
// recurs), no allocation (the draft is written into the caller's buffer).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "sched/draft_length.h"

namespace tally {

// Which draft source a sequence uses. kAuto: n-gram when it has a match, else the draft model
// when one is given (SpecConfig::draft_model_path), else none; the draft length rule then
// drafts only where it pays, pricing the draft model's passes. kDraft: the draft model
// proposes every draft. A draft model's drafts are placeholders the scheduler reserves and the
// engine's DraftModelRunner fills in. (Scheduler::guess_draft() in scheduler_step.cpp is where
// a sequence's source is picked, per sequence and step.)
enum class SpecMode : uint8_t { kOff, kNgram, kAuto, kDraft };

Result<SpecMode> spec_mode_from_name(std::string_view name);
std::string_view spec_mode_name(SpecMode mode);
// "adaptive" or "fixed" (kRandomForTest has no name: tests set it directly).
Result<DraftLengthRule> draft_length_rule_from_name(std::string_view name);

// How a sampled (temperature > 0) request verifies a draft model's tokens
// (--spec-sampled-verify). kToken: as n-gram drafts (q one-hot on the draft model's argmax):
// the target draws each token with the sample's own RNG as without speculation, so a seeded
// request's tokens do not depend on the draft length. kQ: exact rejection sampling with the
// draft's real q: more accepted, same distribution, but the tokens depend on the draft length
// (and so on the batch). Greedy requests and n-gram drafts are the same under both.
enum class SpecSampledVerify : uint8_t { kToken, kQ };

Result<SpecSampledVerify> spec_sampled_verify_from_name(std::string_view name);
std::string_view spec_sampled_verify_name(SpecSampledVerify rule);

// Most draft tokens per sequence and step (num_speculative_tokens): fixed-size per-position
// counters, and beyond it acceptance is rare.
inline constexpr int32_t kMaxSpeculativeTokens = 32;

struct SpecConfig {
  SpecMode mode = SpecMode::kOff;
  int32_t ngram_min = 1;               // shortest suffix matched
  int32_t ngram_max = 4;               // longest suffix matched (tried first)
  int32_t num_speculative_tokens = 4;  // most draft tokens per sequence and step
  DraftLengthRule draft_length = DraftLengthRule::kAdaptive;  // draft_length.h
  uint64_t random_length_seed = 1;     // kRandomForTest's generator
  std::string draft_model_path;        // kDraft: the draft model's GGUF (the engine loads it)
  SpecSampledVerify sampled_verify = SpecSampledVerify::kToken;  // kDraft, sampled requests
  bool enabled() const { return mode != SpecMode::kOff && num_speculative_tokens > 0; }
  // The engine runs a draft model (kDraft, or kAuto given one).
  bool has_draft_model() const {
    return (mode == SpecMode::kDraft || mode == SpecMode::kAuto) && !draft_model_path.empty();
  }
  // Draft positions a sequence's step may verify beyond its own token: the extra logits rows
  // the runner allocates and the plan counts.
  int32_t draft_positions() const { return enabled() ? num_speculative_tokens : 0; }
  // InvalidArgument naming the field: 1 <= ngram_min <= ngram_max, 0 <= num_speculative_tokens
  // <= kMaxSpeculativeTokens, a draft model path exactly when the mode is kDraft.
  Status validate() const;
};

// Writes the draft.size() tokens that would follow `tokens` if its last n tokens repeat an
// earlier occurrence (the tokens after it, continued periodically past the end); returns how
// many (0: no match, else draft.size()). Longer matches win, then later ones.
int32_t ngram_draft(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                    std::span<int32_t> draft);

}  // namespace tally
