// Text <-> token ids for the two tokenizer families GGUF models use, matching llama.cpp:
//   - kSpm (tokenizer.ggml.model = "llama"): SentencePiece-style BPE over token scores, with
//     byte fallback (<0xXX>), spaces as U+2581 and a space prefix (Llama 2, Phi-3, TinyStories);
//   - kBpe (tokenizer.ggml.model = "gpt2"): byte-level BPE over ranked merges after a
//     regex pre-tokenizer chosen by tokenizer.ggml.pre (GPT-2, MPT, Falcon, StarCoder, Refact,
//     DeepSeek, Llama 3, Qwen2).
// Special tokens are split off first (see special_token_matcher.h): user-defined tokens always,
// control tokens only with parse_special.
//
// A Tokenizer owns copies of all its strings (the GGUF file may be closed afterwards). It is
// immutable once built: every method is const and safe to call from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer_vocab.h"

namespace tally {

namespace io {
class GgufFile;
}

namespace tok {
struct VocabTables;
class SpmEncoder;
class BpeEncoder;
class SpecialTokenMatcher;
class PreTokenizer;
}  // namespace tok

class Tokenizer {
 public:
  // From the tokenizer.ggml.* metadata of a GGUF file (llama.cpp's keys and defaults).
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const io::GgufFile& f);
  // From a Hugging Face directory's tokenizer.json and (if present) tokenizer_config.json,
  // mapped as llama.cpp's converter would (see tokenizer_hf.h).
  static Result<std::unique_ptr<Tokenizer>> from_hf_dir(std::string_view dir);
  // From plain vectors; empty optionals take llama.cpp's defaults for the kind.
  static Result<std::unique_ptr<Tokenizer>> from_vocab(TokenizerVocab vocab);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  TokenizerKind kind() const { return kind_; }
  int32_t n_vocab() const;
  const std::string& pre() const { return pre_name_; }  // canonical pre-tokenizer (BPE)

  // add_special: BOS / EOS as add_bos() / add_eos() say. parse_special: control-token texts
  // such as "<|im_start|>" in the text become those tokens (user-defined tokens always do).
  // Never fails: invalid UTF-8 falls back to byte tokens (SPM) or U+FFFD (BPE).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The vocabulary string of a token ("" for an id out of range).
  std::string_view piece(int32_t id) const;
  // The bytes a token stands for: U+2581 -> ' ' and <0xXX> -> the byte (SPM), byte-level
  // characters -> bytes (BPE), user-defined tokens -> their text (SPM: with U+2581 -> ' ').
  // Control and unknown tokens give "" unless render_special, then their text. May be a
  // partial UTF-8 character.
  std::string token_bytes(int32_t id, bool render_special = false) const;
  void append_token_bytes(int32_t id, bool render_special, std::string& out) const;
  // The concatenated bytes of `ids`. For SPM with add_space_prefix, the space the encoder put
  // in front of the text is removed from the first text token (after any leading control
  // tokens), so decode(encode(s, false, false)) == s. skip_special: control and unknown
  // tokens give nothing (else their text). No clean-up of spaces before punctuation.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;

  int32_t bos() const { return bos_id_; }  // -1 when none
  int32_t eos() const { return eos_id_; }
  int32_t eot() const { return eot_id_; }
  int32_t unk() const { return unk_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool normalizes_nfc() const { return normalize_nfc_; }

  // End of generation: EOS, EOT, EOM and the tokens llama.cpp treats as such by their text
  // (<|eot_id|>, <|im_end|>, <|end|>, <|endoftext|>, <end_of_turn>, ...).
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;  // control type (also set for EOG tokens, as llama.cpp)
  TokenType token_type(int32_t id) const;
  float score(int32_t id) const;
  // The id whose vocabulary string is exactly `text`, -1 if none.
  int32_t token_id(std::string_view text) const;

  // The BPE pre-tokenizer (null for SPM); exposed for tests of the regex splitting.
  const tok::PreTokenizer* pre_tokenizer() const;

 private:
  Tokenizer();
  Status init(TokenizerVocab& vocab);
  void find_special_ids(const TokenizerVocab& vocab);
  void encode_text(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;

  TokenizerKind kind_ = TokenizerKind::kSpm;
  std::string pre_name_;
  std::unique_ptr<tok::VocabTables> vocab_;
  std::unique_ptr<tok::SpecialTokenMatcher> specials_;
  std::unique_ptr<tok::SpmEncoder> spm_;
  std::unique_ptr<tok::BpeEncoder> bpe_;
  std::vector<uint8_t> eog_;  // [n_vocab] 1 = end of generation

  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t eot_id_ = -1;
  int32_t eom_id_ = -1;
  int32_t unk_id_ = -1;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool normalize_nfc_ = false;
};

}  // namespace tally
