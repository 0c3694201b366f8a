// A PlanModel from a Hugging Face config.json (llama, mistral, qwen2 style): the fields
// hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size and
// max_position_embeddings are required; num_key_value_heads (default: the attention heads),
// head_dim (default hidden/heads), tie_word_embeddings (default false), attention_bias and
// torch_dtype are optional. A missing or mistyped field is an error that names it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "plan/plan_model.h"

namespace tally::plan {

// Parses the text of a config.json; `name` is used in messages and as the model's name.
Result<PlanModel> plan_model_from_hf_config_text(std::string_view text, const std::string& name);
// Reads and parses a config.json file.
Result<PlanModel> plan_model_from_hf_config(const std::string& path);

}  // namespace tally::plan
