// The checks every architecture's tiny random model goes through (issue 15's "done"): logits
// against the independent reference forward, and greedy output that does not depend on
// batching, chunking or threads.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "reference_model.h"
#include "tiny_model.h"

namespace tally_test {

// A tiny model and the GGUF bytes it views (which must outlive it).
struct LoadedTinyModel {
  std::vector<uint8_t> bytes;
  std::unique_ptr<tally::Model> model;
};
// Writes and loads `spec`; model is null (and the test failed) when it does not load.
LoadedTinyModel load_tiny_model(const TinySpec& spec);

// Prefill of `tokens` on `model` vs the reference stepped token by token: every logit within
// 1e-4 relative (plus 1e-4 absolute near zero) and the same top-1 at every position.
void expect_matches_reference(const tally::Model& model, const RefSpec& ref, const std::vector<int32_t>& tokens);

// Largest |logit difference| between `model` prefilling `tokens` and the reference stepping
// them (the tests that drop one feature from the reference to show it matters).
float reference_max_diff(const tally::Model& model, const RefSpec& ref, const std::vector<int32_t>& tokens);

// The logits of `tokens` prefilled alone on one thread are the same bits as: token-by-token
// decode, a chunked prefill, and the sequence mixed into ragged batches with two others on
// 3 threads over shuffled blocks.
void expect_batch_and_thread_invariant(const tally::Model& model, const std::vector<int32_t>& tokens);

}  // namespace tally_test
