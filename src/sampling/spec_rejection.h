// Exact rejection sampling for a draft token d drawn from a draft model's distribution q
// (speculative decoding, docs/speculative.md): accept d with probability min(1, p(d) / q(d));
// on rejection draw from the residual norm(max(0, p - q)). The emitted token then has exactly
// the target's distribution p, whatever q is (Leviathan et al. 2023, Chen et al. 2023).
// Pure functions of the distributions and the uniforms, so the tests can drive them directly;
// Sampler::sample_with_draft feeds them its processed p and its own RNG.
#pragma once

#include <cstdint>
#include <span>

namespace tally {

// True when u (uniform in [0, 1)) accepts d: u * q(d) < p(d). p, q: [n_vocab].
bool spec_accepts_draft(std::span<const float> p, std::span<const float> q, int32_t d, double u);

// The residual draw after a rejection: the first token whose running sum of max(0, p - q)
// exceeds u times its total. A residual of zero everywhere (p == q, where no rejection
// happens) falls back to p itself.
int32_t spec_residual_sample(std::span<const float> p, std::span<const float> q, double u);

}  // namespace tally
