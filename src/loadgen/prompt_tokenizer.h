// How the load generator counts prompt tokens: with the target server's own tokenizer
// (POST /tokenize and /detokenize, vLLM's shapes or llama.cpp's), so lengths are exact, or,
// when the server has none, a word-based stand-in whose lengths are approximate (the report
// says which was used).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/http_client.h"

namespace tally::loadgen {

class PromptTokenizer {
 public:
  virtual ~PromptTokenizer() = default;
  // The text's tokens, without special tokens (BOS): what the server adds is not counted.
  virtual Result<std::vector<int32_t>> encode(const std::string& text) = 0;
  virtual Result<std::string> decode(const std::vector<int32_t>& ids) = 0;
  virtual bool exact() const = 0;
  // "server /tokenize" or "words (approximate: ...)".
  virtual std::string description() const = 0;
};

// Whitespace-separated words, each one "token"; ids index the built-in word list (others
// map to a hash), so decode(encode(t)) keeps only known words.
std::unique_ptr<PromptTokenizer> make_word_tokenizer(std::string why);

// The server's tokenizer when /tokenize answers (vLLM: {"prompt"} -> {"tokens"}; llama.cpp:
// {"content"} -> {"tokens"}); else nullptr with the reason in `why`.
std::unique_ptr<PromptTokenizer> probe_server_tokenizer(HttpClient& client,
                                                        const std::string& model,
                                                        const std::string& api_key,
                                                        std::string& why);

}  // namespace tally::loadgen
