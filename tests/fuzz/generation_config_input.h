// What the generation_config fuzz target does with one input, shared with the seed test
// (tests/unit/model/generation_config_fuzz_seeds_test.cpp): the bytes are a
// generation_config.json's text, read as `-m DIR` and `--generation-config DIR` read it
// (parse_generation_config_text). A refusal must say what is wrong. An accepted config must
// hold values SamplingDefaults::validate takes, and come back the same through the GGUF keys
// it is carried in: written (write_generation_config), parsed as a GGUF file, read back
// (read_gguf_sampling_defaults, tokenizer.ggml.eos_token_ids). Anything else traps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/generation_config.h"

namespace tally::fuzz {

enum class GenerationConfigFuzzOutcome { kRefused, kAccepted };

inline void generation_config_fuzz_require(bool cond) {
  if (!cond) __builtin_trap();
}

inline GenerationConfigFuzzOutcome generation_config_fuzz_one(const uint8_t* data, size_t size) {
  auto& require = generation_config_fuzz_require;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = parse_generation_config_text(text);
  if (!c.ok()) {
    require(!c.status().message().empty());
    return GenerationConfigFuzzOutcome::kRefused;
  }
  const SamplingDefaults& s = c->sampling;
  require(s.validate().ok());
  for (int32_t id : c->eos_ids) require(id >= 0);

  io::GgufWriter w;
  w.set_string("general.architecture", "llama");
  write_generation_config(*c, /*eos_id=*/std::nullopt, w);
  auto f = io::GgufFile::parse_owned(w.to_bytes(), "generation_config");
  require(f.ok());
  auto back = read_gguf_sampling_defaults(*f);
  require(back.ok());
  require(back->temperature == s.temperature && back->top_k == s.top_k && back->top_p == s.top_p &&
          back->min_p == s.min_p && back->repetition_penalty == s.repetition_penalty &&
          back->penalty_last_n == s.penalty_last_n);
  if (c->eos_ids.empty()) {
    require(f->find("tokenizer.ggml.eos_token_ids") == nullptr);
  } else {
    auto ids = f->get_int_array("tokenizer.ggml.eos_token_ids");
    require(ids.ok() && *ids == std::vector<int64_t>(c->eos_ids.begin(), c->eos_ids.end()));
  }
  return GenerationConfigFuzzOutcome::kAccepted;
}

}  // namespace tally::fuzz
