// Hugging Face tokenizer files -> the TokenizerVocab that llama.cpp's converter would write
// into a GGUF (tokenizer.ggml.*), so one path (Tokenizer::from_vocab) builds every tokenizer.
//
// tokenizer.json: a "BPE" model, either byte-level (a ByteLevel pre-tokenizer or decoder; the
// Split regex names the pre-tokenizer spec, see pre_tokenizer_specs.h) -> kBpe, or
// SentencePiece-style (byte_fallback, spaces as U+2581 by a Replace normalizer or a Metaspace
// pre-tokenizer) -> kSpm with scores from the merge ranks. Merges in both the "a b" and the
// ["a", "b"] form. added_tokens: special -> control, others -> user-defined. Normalizers: none,
// NFC, and the U+2581 replacement/prepend of SentencePiece models. Anything else is a
// kUnsupported error that names it.
// tokenizer_config.json (optional: null): bos_token / eos_token / unk_token (a string or an
// AddedToken object; null = none), add_bos_token, add_eos_token.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tokenizer/tokenizer_vocab.h"

namespace tally {

// `tokenizer_json` is the file's text (parsed with simdjson: a 33 MB Gemma 3 file in tens of
// milliseconds, where a DOM of nlohmann::json took seconds; see hf_json_document.h).
Result<TokenizerVocab> tokenizer_vocab_from_hf(std::string_view tokenizer_json,
                                               const nlohmann::json& tokenizer_config);
// The same for DIR/tokenizer.json (read without a copy of its text). Without that file,
// kNotFound saying what is missing, what tally reads, and what the directory holds instead
// (a SentencePiece tokenizer.model, a llama2.c tokenizer .bin, GPT-2's vocab.json +
// merges.txt) with the way from there.
Result<TokenizerVocab> tokenizer_vocab_from_hf_dir(std::string_view dir,
                                                   const nlohmann::json& tokenizer_config);

// A whole file; kNotFound when absent.
Result<std::string> read_hf_file(std::string_view path);
// tokenizer_config.json without its added_tokens_decoder (tokenizer.json's added_tokens
// again, and most of the file); kFormat when it is not a JSON object.
Result<nlohmann::json> read_hf_config(std::string_view path);

// A special-token entry of tokenizer_config.json ("<s>" or {"content": "<s>", ...}); "" for
// null or absent.
std::string hf_token_text(const nlohmann::json& config, std::string_view key);

}  // namespace tally
