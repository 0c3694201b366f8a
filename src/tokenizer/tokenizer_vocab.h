// The plain data a Tokenizer is built from: what a GGUF file's tokenizer.ggml.* keys hold,
// or what a test writes by hand. Optional fields left empty take llama.cpp's defaults for the
// kind (see Tokenizer::from_vocab).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tally {

// A special-token id that says "none at all" (a Hugging Face config's null), where an absent
// or out-of-range id takes the kind's default.
inline constexpr int32_t kNoTokenId = -2;

enum class TokenizerKind {
  kSpm,  // SentencePiece-style BPE over scores (tokenizer.ggml.model = "llama")
  kBpe,  // byte-level BPE over ranked merges (tokenizer.ggml.model = "gpt2")
};

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,       // BOS, EOS, <|im_start|>...: matched in text only with parse_special
  kUserDefined = 4,   // added tokens: always matched in text before the model splits it
  kUnused = 5,
  kByte = 6,          // SPM byte fallback <0xXX>
};

struct TokenizerVocab {
  TokenizerKind kind = TokenizerKind::kSpm;
  std::vector<std::string> tokens;   // [n_vocab] as stored (SPM: U+2581 for space)
  std::vector<float> scores;         // [n_vocab] or empty (all 0); SPM merge priorities
                                     // (-infinity: never merged into, see tokenizer_hf.h)
  std::vector<TokenType> types;      // [n_vocab] or empty (all kNormal)
  std::vector<std::string> merges;   // BPE: "left right", earlier = higher priority
  std::string pre;                   // BPE pre-tokenizer (tokenizer.ggml.pre); "" = gpt-2
  bool normalize_nfc = false;        // text -> Unicode NFC before the model (HF "NFC"
                                     // normalizer; GGUF has no key for it)

  // Ids: nullopt or out of range -> the default; kNoTokenId -> none.
  std::optional<int32_t> bos_id;     // SPM default 1, BPE default 11 (llama.cpp's)
  std::optional<int32_t> eos_id;     // SPM default 2, BPE default 11
  std::optional<int32_t> eot_id;     // default: found by text (<|eot_id|>, <|im_end|>, ...)
  std::optional<int32_t> eom_id;     // default: found by text (<|eom_id|>)
  std::vector<int32_t> extra_eos_ids;  // more ids that end generation (tokenizer.ggml.eos_token_ids,
                                       // from generation_config.json's eos_token_id list)
  std::optional<int32_t> unk_id;     // SPM default 0, BPE none
  std::optional<bool> add_bos;       // SPM true; BPE false, except llama3-family pre
  std::optional<bool> add_eos;       // false
  std::optional<bool> add_space_prefix;  // SPM true, BPE false
};

}  // namespace tally
