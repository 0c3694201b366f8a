#include "model/model.h"

#include "model/hf_checkpoint.h"
#include "model/rope_freqs.h"

namespace tally {

// gguf_path may also be a Hugging Face model directory (model/hf_checkpoint.h).
Result<std::unique_ptr<Model>> Model::load(const std::string& gguf_path, const Backend& backend,
                                           const LoadProgress& progress) {
  TALLY_ASSIGN_OR_RETURN(io::GgufFile gguf, open_model_file(gguf_path));
  auto model = from_gguf(std::move(gguf), backend, progress);
  if (!model.ok()) return model.status().with_context(gguf_path);
  return model;
}

Result<std::unique_ptr<Model>> Model::from_gguf(io::GgufFile gguf, const Backend& backend,
                                                const LoadProgress& progress) {
  TALLY_ASSIGN_OR_RETURN(ModelConfig config, model_config_from_gguf(gguf));
  TALLY_ASSIGN_OR_RETURN(ModelWeights weights, bind_weights(gguf, config, backend, progress));
  return std::unique_ptr<Model>(
      new Model(std::move(gguf), std::move(config), std::move(weights), backend));
}

Model::Model(io::GgufFile gguf, ModelConfig config, ModelWeights weights, const Backend& backend)
    : backend_(&backend),
      gguf_(std::move(gguf)),
      config_(std::move(config)),
      weights_(std::move(weights)),
      rope_freqs_(rope_frequencies(config_, weights_.rope_freqs)) {
  use_context_length(config_.context_length);
  if (config_.arch->swa_rope_base > 0.0f) {  // gemma3's local layers: their own base, unscaled
    ModelConfig local = config_;
    local.rope_freq_base = config_.arch->swa_rope_base;
    local.rope_scaling = RopeScaling{};
    local_rope_freqs_ = rope_frequencies(local, {});
  }
}

void Model::use_context_length(int64_t max_seq_len) {
  if (!config_.has_longrope) return;
  const bool long_factors = max_seq_len > config_.rope_scaling.original_context_length;
  rope_freqs_ = rope_frequencies(config_, long_factors ? weights_.rope_factors_long : weights_.rope_factors_short);
}

}  // namespace tally
