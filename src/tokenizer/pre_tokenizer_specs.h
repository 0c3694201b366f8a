// Which regexes split text into words before byte-level BPE, per tokenizer.ggml.pre name.
// The regex lists are llama.cpp's (src/llama-vocab.cpp), which reproduce the Hugging Face
// tokenizers' pre-tokenizers on llama.cpp's golden vectors; where llama.cpp rewrote a
// case-insensitive group "(?i:'s|...)" as "'[sS]|...", the rewrite is kept (PCRE2's (?i) would
// also fold U+017F 'ſ' and U+212A KELVIN SIGN, which those vectors do not expect).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tally::tok {

struct PreTokenizerSpec {
  std::string_view name;                   // canonical name
  std::vector<std::string_view> patterns;  // PCRE2 syntax, applied in order (see PreTokenizer)
  bool ignore_merges = false;  // a word that is itself a token is emitted whole (Llama 3)
  bool add_bos = false;        // llama.cpp's add_bos default for this pre-tokenizer
};

// nullopt for a name tally does not know. "" and "default" mean gpt-2's regex (llama.cpp
// falls back to its own four-regex list there instead; no golden vectors cover either).
std::optional<PreTokenizerSpec> find_pre_tokenizer_spec(std::string_view pre_name);

}  // namespace tally::tok
