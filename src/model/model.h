// A llama-family model: its config, its weights bound to the GGUF file (which the Model keeps
// open) and the forward pass over a ragged batch.
//
// forward() is a fixed sequence of backend ops per layer (docs/model.md):
//   embed (x sqrt(n_embd)) -> [rmsnorm -> q,k,v matmuls (+bias) (-> per-head q,k rmsnorm) ->
//   rope -> write K,V -> paged attention (sliding window, soft-cap) -> wo matmul (-> rmsnorm) ->
//   residual add -> rmsnorm -> gate, up matmuls -> silu(gate)*up or gelu(gate)*up -> down
//   matmul (-> rmsnorm) -> residual add] x L -> final rmsnorm (logit rows only) -> output
//   matmul (logit rows only) (-> soft-cap)
// Architectures differ only by the flags of their ArchTraits row.
//
// Each op is a call of the model's Backend (backend/backend.h), chosen at load.
//
// Thread rules: a Model is immutable after load; forward() is const and may run concurrently
// on different (KvStorage, ForwardScratch, ThreadPool) triples.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "io/gguf.h"
#include "model/batch.h"
#include "model/forward_scratch.h"
#include "model/kv_storage.h"
#include "model/model_config.h"
#include "model/matmul_observer.h"
#include "model/model_weights.h"

namespace tally {

class Model {
 public:
  // `backend` must outlive the model (the registry's backends live as long as the process).
  // progress: called as the weights are bound, layer by layer (e.g. a progress bar).
  static Result<std::unique_ptr<Model>> load(const std::string& gguf_path,
                                             const Backend& backend = default_backend(),
                                             const LoadProgress& progress = {});
  static Result<std::unique_ptr<Model>> from_gguf(io::GgufFile gguf,
                                                  const Backend& backend = default_backend(),
                                                  const LoadProgress& progress = {});

  const ModelConfig& config() const { return config_; }
  const io::GgufFile& gguf() const { return gguf_; }
  const ModelWeights& weights() const { return weights_; }
  const Backend& backend() const { return *backend_; }
  // [rope_dim/2] radians per position of each rotated pair, scaling included.
  const std::vector<float>& rope_freqs() const { return rope_freqs_; }
  // The longest sequence this model will run (the engine's max_model_len; the trained
  // context until told). It picks LongRoPE's factor set as llama.cpp picks it from its context
  // size: rope_factors_long past the original context, else rope_factors_short; a no-op for
  // other models. Call before the first forward(): one set for every request, so a request's
  // output does not depend on its length or its neighbours.
  void use_context_length(int64_t max_seq_len);
  // The same for the sliding-window layers of an arch with a rope base of their own (gemma3);
  // empty when they use rope_freqs().
  const std::vector<float>& local_rope_freqs() const { return local_rope_freqs_; }

  // Runs the batch: writes K/V of its tokens into `kv` at their slots and writes
  // logits [batch.logit_rows.size()][n_vocab]. A batch that does not fit the model, the cache
  // or the scratch (see validate_batch) is an InvalidArgument and changes nothing.
  // `observer`, when given, sees the input of every matrix product (matmul_observer.h).
  Status forward(const Batch& batch, KvStorage& kv, ForwardScratch& scratch, ThreadPool& pool,
                 float* logits, MatmulObserver* observer = nullptr) const;

 private:
  Model(io::GgufFile gguf, ModelConfig config, ModelWeights weights, const Backend& backend);

  const Backend* backend_;
  io::GgufFile gguf_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<float> rope_freqs_;
  std::vector<float> local_rope_freqs_;
};

}  // namespace tally
