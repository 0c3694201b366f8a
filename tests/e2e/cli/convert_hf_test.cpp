// Hugging Face directories through the real binary: `tally convert --hf` writes a GGUF that
// `tally generate` runs to the same greedy text as `generate -m DIR`, `--type q8_0` quantizes
// on the way, and a bad directory or type is one clear error.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "hf_dir_writer.h"
#include "io/gguf.h"
#include "support/run_command.h"
#include "support/test_data.h"
#include "tiny_model.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

std::string write_dir(const std::string& name, const tally_test::TinySpec& spec) {
  const std::vector<uint8_t> bytes = tally_test::make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  EXPECT_TRUE(gguf.ok());
  const std::string dir = tally_test::temp_dir() + "/" + name;
  tally_test::HfDirOptions o;
  o.shards = 2;
  tally_test::write_hf_dir(spec, *gguf, dir, o);
  return dir;
}

tally_test::TinySpec qwen3_spec() {
  tally_test::TinySpec s;
  s.arch = "qwen3";
  s.qk_norm = true;
  s.n_vocab = 128;
  s.n_ff = 64;  // whole q8_0 blocks for --type q8_0
  s.seed = 5;
  return s;
}

TEST(ConvertHf, ConvertedGgufGeneratesLikeTheDirectory) {
  const std::string dir = write_dir("Qwen3-tiny", qwen3_spec());
  const std::string out = tally_test::temp_dir() + "/qwen3_tiny.gguf";
  auto r = run_command(tally("convert --hf " + shell_quote(dir) + " -o " + shell_quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Qwen3ForCausalLM as qwen3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("from 2 safetensors files"), std::string::npos) << r.err;

  const std::string gen = " -p 'abc ab' -n 8 --temp 0";
  const auto from_dir = run_command(tally("generate -m " + shell_quote(dir) + gen));
  const auto from_gguf = run_command(tally("generate -m " + shell_quote(out) + gen));
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.err;
  ASSERT_EQ(from_gguf.exit_code, 0) << from_gguf.err;
  EXPECT_FALSE(from_dir.out.empty());
  EXPECT_EQ(from_dir.out, from_gguf.out);

  r = run_command(tally("info " + shell_quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Qwen3-tiny"), std::string::npos) << r.out;  // general.name

  const std::string q8 = tally_test::temp_dir() + "/qwen3_tiny_q8.gguf";
  r = run_command(tally("convert --hf " + shell_quote(dir) + " --type q8_0 -o " + shell_quote(q8)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = tally::io::GgufFile::open(q8);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, tally::DType::kQ8_0);
  EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->type, tally::DType::kF32);
  for (const auto& entry : std::filesystem::directory_iterator(tally_test::temp_dir()))
    EXPECT_EQ(entry.path().string().find(".f.tmp"), std::string::npos) << entry.path();  // no leftover
  std::remove(out.c_str());
  std::remove(q8.c_str());
}

TEST(ConvertHf, BadDirectoriesAndTypesAreClearErrors) {
  const std::string dir = write_dir("bad", qwen3_spec());
  const std::string out = tally_test::temp_dir() + "/never.gguf";
  auto r = run_command(tally("convert --hf " + shell_quote(dir) + " --type q9_9 -o " + shell_quote(out)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("q9_9"), std::string::npos) << r.err;

  // A SentencePiece-only directory (tokenizer.model, no tokenizer.json): one error naming both.
  std::filesystem::rename(dir + "/tokenizer.json", dir + "/tokenizer.json.away");
  std::ofstream(dir + "/tokenizer.model") << "\x0a\x0b<unk>";
  r = run_command(tally("generate -m " + shell_quote(dir) + " -p hi -n 2"));
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tokenizer.json not found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the directory has tokenizer.model: a SentencePiece model"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::rename(dir + "/tokenizer.json.away", dir + "/tokenizer.json");

  std::ofstream(dir + "/config.json") << R"({"architectures": ["MambaForCausalLM"]})";
  r = run_command(tally("generate -m " + shell_quote(dir) + " -p hi -n 2"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("architecture 'MambaForCausalLM' is not supported"), std::string::npos) << r.err;
  r = run_command(tally("convert --hf " + shell_quote(dir) + " -o " + shell_quote(out)));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("MambaForCausalLM"), std::string::npos) << r.err;
  EXPECT_FALSE(tally_test::file_exists(out));
}

}  // namespace
