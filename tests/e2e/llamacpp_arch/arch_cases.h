// The models tally is compared with llama.cpp on: one tiny random model per architecture and
// feature (written as a Hugging Face directory, converted by `tally convert --hf`), the
// pre-2024 per-expert Mixtral tensors written as GGUF directly, and stories260K's real weights.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tiny_model.h"

namespace tally_test {

struct ArchCase {
  std::string label;
  TinySpec spec;
  nlohmann::json extra_config = nlohmann::json::object();  // merged into config.json
  // Written by make_tiny_gguf (split expert tensors) with the tokenizer of the converted
  // directory, instead of by `tally convert --hf`.
  bool direct_gguf = false;
  std::string model_path;  // a GGUF in the repo (stories260K): no tiny model
  std::vector<std::string> prompts;
};

std::vector<ArchCase> arch_cases();

}  // namespace tally_test
