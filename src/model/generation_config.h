// A model's generation defaults: Hugging Face generation_config.json <-> the GGUF keys
// (llama.cpp's general.sampling.*, and tokenizer.ggml.eos_token_ids for a list of stop ids, as
// Ollama writes it), and the `--generation-config` setting of `tally serve` / `tally generate`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "sampling/sampling_defaults.h"

namespace tally {

struct GenerationConfig {
  SamplingDefaults sampling;     // temperature, top_k, top_p, min_p, repetition_penalty
  std::vector<int32_t> eos_ids;  // eos_token_id (a number or a list), in its order
};

// generation_config.json's object. Like vLLM, only the sampling fields are read (do_sample is
// not: a model that names a temperature gets it). kFormat for a field of the wrong type or out
// of range, naming it.
Result<GenerationConfig> parse_generation_config(const nlohmann::json& g);
// The text of a generation_config.json (what read_generation_config_dir reads).
Result<GenerationConfig> parse_generation_config_text(std::string_view text);
// DIR/generation_config.json; an empty config when the file is absent.
Result<GenerationConfig> read_generation_config_dir(const std::string& dir);

// The general.sampling.* keys of `c.sampling`, and tokenizer.ggml.eos_token_ids when the list
// says more than the tokenizer's own EOS (`eos_id`).
void write_generation_config(const GenerationConfig& c, std::optional<int32_t> eos_id, io::GgufWriter& w);
// The general.sampling.* keys of a model file (kFormat for a key of the wrong type or range).
Result<SamplingDefaults> read_gguf_sampling_defaults(const io::GgufFile& f);

// `--generation-config`: "auto" (the model's own: `model`'s general.sampling.* keys; none when
// `model` is null, a file without GGUF metadata), "none" (the caller's defaults) or a directory
// holding a generation_config.json.
Result<SamplingDefaults> resolve_generation_config(std::string_view setting, const io::GgufFile* model);

}  // namespace tally
