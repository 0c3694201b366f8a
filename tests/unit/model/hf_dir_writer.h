// Writes a Hugging Face model directory from a tiny GGUF model (tiny_model.h): config.json from
// its TinySpec, its tensors under the Hugging Face names in safetensors (the inverse of
// model/hf_tensors.h: dims in PyTorch order, llama's q/k rows back in the half-split rope order,
// Gemma's norms as w - 1, 3-D expert tensors split per expert), optionally over several shards
// with model.safetensors.index.json, and a small byte-level BPE tokenizer.json (102 tokens) with
// its tokenizer_config.json. So `-m DIR` and `convert --hf` can be checked against the GGUF the
// directory came from.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "tiny_model.h"

namespace tally_test {

struct HfDirOptions {
  int shards = 1;
  nlohmann::json extra_config = nlohmann::json::object();  // merged into config.json
  bool tokenizer = true;                                     // tokenizer.json + tokenizer_config.json
  // Appended to tokenizer.json's added_tokens ({id, content, special} objects, ids past the
  // 102 tokens: the config's vocab_size pads the rest).
  nlohmann::json added_tokens = nlohmann::json::array();
};

// The Hugging Face class of a tiny spec ("LlamaForCausalLM", "MixtralForCausalLM", ...).
std::string hf_class_of(const TinySpec& spec);

// `gguf` must be make_tiny_gguf(spec) parsed. Creates `dir` (removing what was there).
void write_hf_dir(const TinySpec& spec, const tally::io::GgufFile& gguf, const std::string& dir,
                  const HfDirOptions& options = {});

// The byte-level tokenizer.json the directories get (102 tokens, merges "a b", "ab c", "Ġ a").
nlohmann::json tiny_tokenizer_json();

}  // namespace tally_test
