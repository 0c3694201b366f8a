// A 300-token vocabulary ("t0" ... "t299") for the synthetic models of these tests, written
// as a GGUF under the test's temp dir with the given file name; returns its path.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/gguf_writer.h"
#include "support/test_data.h"

namespace tally {

inline std::string write_tiny_vocab(const std::string& file_name) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 300; ++i) tokens.push_back(fmt::format("t{}", i));
  io::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  const std::string path = tally_test::temp_dir() + "/" + file_name;
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

}  // namespace tally
