// Generation for one sequence at a time: prompt -> prefill (in chunks of up to max_batch
// tokens, one forward each) -> decode loop -> sampled tokens, handed to a callback as they come.
// This is what `tally generate` runs; the engine (continuous batching) replaces it for serving
// and drives the same Model::forward with ragged batches.
//
// Thread rules: one thread uses a Generator at a time; the ThreadPool is borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/function_ref.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace tally {

struct GenerateRequest {
  std::vector<int32_t> prompt;     // token ids, BOS included when the model wants one
  int32_t max_new_tokens = 256;    // tokens to sample at most
  SamplingParams sampling;
  bool ignore_eos = false;         // keep going past end-of-generation tokens
  std::vector<int32_t> stop_tokens;  // end generation when sampled (EOS, EOT, ... and BOS)
};

enum class GenerateFinish { kLength, kStopToken, kCallback, kContextFull };
const char* finish_reason_name(GenerateFinish r);

struct GenerateStats {
  int32_t n_prompt = 0;
  int32_t n_generated = 0;
  double prefill_seconds = 0;  // forward passes over the prompt
  double ttft_seconds = 0;     // start -> first sampled token
  double decode_seconds = 0;   // after the first token -> the last
  GenerateFinish finish = GenerateFinish::kLength;
};

class Generator {
 public:
  // max_context: positions this generator can hold (prompt + generated); KV is allocated for
  // it once. max_batch: tokens per forward (prefill chunk). kv_type: the KV cache's storage
  // (f32, f16 or bf16).
  Generator(const Model& model, ThreadPool& pool, int32_t max_context, int32_t max_batch = 512,
            int32_t block_size = 16, DType kv_type = DType::kF32);
  ~Generator();

  // on_token(id) is called for every sampled token; returning false ends generation.
  // A stop token ends generation without being passed to on_token.
  Result<GenerateStats> generate(const GenerateRequest& request,
                                 FunctionRef<bool(int32_t token)> on_token);

  const KvStorage& kv_cache() const { return *kv_; }

  // Logits of the last forward (for tests): [n_vocab].
  std::span<const float> last_logits() const { return logits_; }

 private:
  const Model& model_;
  ThreadPool& pool_;
  int32_t max_context_;
  int32_t max_batch_;
  int32_t block_size_;
  std::unique_ptr<KvStorage> kv_;
  std::unique_ptr<ForwardScratch> scratch_;
  std::vector<int32_t> block_table_;  // identity: sequence block i -> physical block i
  std::vector<float> logits_;         // [n_vocab]
};

}  // namespace tally
