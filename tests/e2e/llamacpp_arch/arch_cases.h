// The models tally is compared with llama.cpp on: one tiny random model per architecture and
// feature (written as a Hugging Face directory, converted by `tally convert --hf`), the
// pre-2024 per-expert Mixtral tensors written as GGUF directly, and stories260K's real weights.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tiny_model.h"

namespace tally_test {

// The context both tally (`generate -c`, Model::use_context_length) and llama.cpp run every
// case with; it picks LongRoPE's factor set.
inline constexpr int kArchContext = 256;

struct ArchCase {
  std::string label;
  TinySpec spec;
  nlohmann::json extra_config = nlohmann::json::object();  // merged into config.json
  // Written by make_tiny_gguf (split expert tensors) with the tokenizer of the converted
  // directory, instead of by `tally convert --hf`. llama.cpp no longer loads per-expert tensors
  // ("check_tensor_dims: tensor 'blk.0.ffn_down_exps.weight' not found"), so its reference is
  // the same matrices in the merged form.
  bool direct_gguf = false;
  // llama.cpp ignores `llama.attention.sliding_window` (it attends to the whole context where
  // Hugging Face's Mistral masks to the window): only the positions before the window are
  // compared, and the later ones must differ (so a llama.cpp that applies it shows up here).
  int llamacpp_ignores_window = 0;
  // Appended to the directory's tokenizer.json added_tokens (hf_dir_writer.h).
  nlohmann::json added_tokens = nlohmann::json::array();
  std::string model_path;  // a GGUF in the repo (stories260K): no tiny model
  std::vector<std::string> prompts;
};

std::vector<ArchCase> arch_cases();

// gtest prints a case by its label (test names and failure messages, not the struct's bytes).
inline void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.label; }

}  // namespace tally_test
