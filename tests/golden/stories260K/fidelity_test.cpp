// The acceptance test of the foundation: greedy `tally generate` on stories260K prints byte for
// byte what llama2.c's run.c printed and samples exactly its token ids — on tally's own
// conversion (the bundled model) and on llama.cpp's conversion of the same checkpoint.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

struct Reference {
  std::string stem;    // tests/data/reference/<stem>.txt / .ids.txt
  std::string prompt;  // as passed to run.c -i (see COMMANDS.md)
};

const Reference kReferences[] = {
    {"stories260K_greedy_empty", ""},
    {"stories260K_greedy_once_upon_a_time", "Once upon a time"},
    {"stories260K_greedy_lily_and_tom", "Lily and Tom"},
    {"stories260K_greedy_the_cat_sat_on_the_mat", "The cat sat on the mat"},
    {"stories260K_greedy_one_day_a_little_girl_named", "One day, a little girl named"},
};

struct RefIds {
  std::vector<int> prompt_ids, sampled_ids;
  bool stopped_on_bos = false;
};

std::vector<int> parse_ids(const std::string& line) {
  std::istringstream in(line);
  std::vector<int> ids;
  int id;
  while (in >> id) ids.push_back(id);
  return ids;
}

RefIds read_ids(const std::string& path) {
  RefIds r;
  std::istringstream in(tally_test::read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon), value = line.substr(colon + 1);
    if (key == "prompt_ids") r.prompt_ids = parse_ids(value);
    if (key == "sampled_ids") r.sampled_ids = parse_ids(value);
    if (key == "stopped_on_bos") r.stopped_on_bos = value.find("yes") != std::string::npos;
  }
  return r;
}

// "sampled ids: 1 2 3" on stderr.
std::vector<int> sampled_ids_from_stderr(const std::string& err) {
  const std::string key = "sampled ids:";
  auto pos = err.find(key);
  if (pos == std::string::npos) return {};
  auto end = err.find('\n', pos);
  return parse_ids(err.substr(pos + key.size(), end - pos - key.size()));
}

void check_model(const std::string& model, int threads) {
  for (const auto& ref : kReferences) {
    SCOPED_TRACE(ref.stem + " on " + model + " threads " + std::to_string(threads));
    const std::string dir = tally_test::repo_path("tests/data/reference/");
    const std::string expected_text = tally_test::read_file(dir + ref.stem + ".txt");
    RefIds ids = read_ids(dir + ref.stem + ".ids.txt");
    ASSERT_FALSE(ids.prompt_ids.empty());
    ASSERT_FALSE(ids.sampled_ids.empty());
    // run.c's -n 256 counts positions: it samples 256 - n_prompt + 1 tokens (or stops on BOS,
    // which it samples but does not print; tally ends on it without emitting it).
    const int n_predict = 256 - static_cast<int>(ids.prompt_ids.size()) + 1;
    std::vector<int> expected_sampled = ids.sampled_ids;
    if (ids.stopped_on_bos) {
      ASSERT_EQ(expected_sampled.back(), 1);
      expected_sampled.pop_back();
    }

    auto tok = run_command(tally_test::tally_binary() + " tokenize --ids " + shell_quote(model) + " " +
                           shell_quote(ref.prompt));
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    EXPECT_EQ(parse_ids(tok.out), ids.prompt_ids);

    // run.c keeps its KV cache in f32: with the default f16 cache some greedy continuations
    // part from its ids (rounding, not a bug), so the byte-for-byte check asks for f32.
    auto gen = run_command(tally_test::tally_binary() + " generate --kv-type f32 --temp 0 --print-ids -m " +
                           shell_quote(model) + " -p " + shell_quote(ref.prompt) + " -n " +
                           std::to_string(n_predict) + " -t " + std::to_string(threads));
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    EXPECT_EQ(sampled_ids_from_stderr(gen.err), expected_sampled);
    EXPECT_EQ(gen.out, expected_text);
  }
}

TEST(Stories260KFidelity, BundledModelMatchesRunC) {
  check_model(tally_test::repo_path("models/stories260K.gguf"), 1);
}

TEST(Stories260KFidelity, BundledModelMatchesRunCOnTwoThreads) {
  check_model(tally_test::repo_path("models/stories260K.gguf"), 2);
}

TEST(Stories260KFidelity, LlamaCppConversionMatchesRunC) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
  check_model(path, 2);
}

// `tally convert` is deterministic: converting the checkpoint again reproduces the bundled file.
TEST(Stories260KFidelity, ConvertReproducesBundledModel) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.bin", checkpoint);
  const std::string out = tally_test::temp_dir() + "/stories260K.gguf";
  auto r = run_command(tally_test::tally_binary() + " convert --llama2c " + shell_quote(checkpoint) +
                       " --tokenizer " + shell_quote(tally_test::shared_dir() + "/models/stories260K/tok512.bin") +
                       " -o " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(tally_test::read_file(out), tally_test::read_file(tally_test::repo_path("models/stories260K.gguf")));
}

}  // namespace
