// Shared helpers of the tokenizer tests: llama.cpp's golden vector files and escaping for
// readable failure messages.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tally_test {

inline constexpr std::string_view kVocabDir = "models/ggml-vocab";

// The strings of a .inp file (separated by "\n__ggml_vocab_test__\n", which also ends it).
std::vector<std::string> read_vocab_inputs(const std::string& path);
// The id lists of a .out file, one per line.
std::vector<std::vector<int32_t>> read_vocab_outputs(const std::string& path);

// A tokenizer from a GGUF file; fails the test (and returns null) when it cannot be loaded.
std::unique_ptr<tally::Tokenizer> load_gguf_tokenizer(const std::string& path);

// C-style escapes for non-printable and non-ASCII bytes.
std::string escaped(std::string_view s);
std::string ids_to_string(const std::vector<int32_t>& ids);

}  // namespace tally_test
