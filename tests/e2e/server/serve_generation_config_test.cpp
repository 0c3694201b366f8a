// A Hugging Face directory's generation_config.json through the real binary: its sampling
// becomes the default of `tally serve`'s requests and of `tally generate` (a field a request
// sends, or a flag given, wins; `--generation-config none` turns it off), and every id of its
// eos_token_id list ends generation.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hf_dir_writer.h"
#include "io/gguf.h"
#include "serve_process.h"
#include "support/run_command.h"
#include "support/test_data.h"
#include "tiny_model.h"

namespace {

using nlohmann::json;
using tally_test::curl;
using tally_test::run_command;
using tally_test::ServeProcess;
using tally_test::shell_quote;

const std::string kGenerate = " -p 'abc ab' -n 12 --no-echo --print-ids";

std::string write_dir() {
  tally_test::TinySpec spec;
  spec.arch = "qwen3";
  spec.qk_norm = true;
  spec.n_vocab = 128;
  spec.seed = 11;
  const std::vector<uint8_t> bytes = tally_test::make_tiny_gguf(spec);
  auto gguf = tally::io::GgufFile::parse(bytes);
  EXPECT_TRUE(gguf.ok());
  const std::string dir = tally_test::temp_dir() + "/Qwen3-gen-config";
  tally_test::write_hf_dir(spec, *gguf, dir);
  return dir;
}

struct Generated {
  std::vector<int32_t> ids;
  std::string finish;
};

Generated generate(const std::string& dir, const std::string& flags) {
  auto r = run_command(tally_test::tally_binary() + " generate -m " + shell_quote(dir) + kGenerate + flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Generated g;
  const size_t ids = r.err.find("sampled ids: ");
  EXPECT_NE(ids, std::string::npos) << r.err;
  if (ids == std::string::npos) return g;
  std::istringstream in(r.err.substr(ids + 13, r.err.find('\n', ids) - ids - 13));
  for (int32_t id; in >> id;) g.ids.push_back(id);
  const size_t finish = r.err.find("finish: ");
  if (finish != std::string::npos) g.finish = r.err.substr(finish + 8, r.err.find(')', finish) - finish - 8);
  return g;
}

// (text, completion tokens, finish reason) of one completion.
std::tuple<std::string, int, std::string> complete(const ServeProcess& server, const json& fields) {
  json body = {{"prompt", "abc ab"}, {"max_tokens", 12}, {"seed", 7}};
  body.update(fields);
  const auto r = curl(server.url() + "/v1/completions", "POST", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("choices")) return {};
  return {j["choices"][0]["text"].get<std::string>(), j["usage"]["completion_tokens"].get<int>(),
          j["choices"][0]["finish_reason"].get<std::string>()};
}

TEST(ServeGenerationConfig, ModelDefaultsApplyRequestsWinAndEveryEosStops) {
  const std::string dir = write_dir();
  const Generated greedy = generate(dir, " --temp 0");
  ASSERT_GE(greedy.ids.size(), 2u) << "the tiny model should not end at once";
  // A second eos id: a token the greedy run produces, so it must now end there.
  const int32_t eos2 = greedy.ids[std::min<size_t>(3, greedy.ids.size() - 1)];
  const size_t stop_at = static_cast<size_t>(std::find(greedy.ids.begin(), greedy.ids.end(), eos2) - greedy.ids.begin());
  const std::vector<int32_t> until_eos2(greedy.ids.begin(), greedy.ids.begin() + static_cast<std::ptrdiff_t>(stop_at));
  // top_k 1: whatever the seed and temperature, the model's default is greedy.
  std::ofstream(dir + "/generation_config.json")
      << json{{"temperature", 0.9}, {"top_k", 1}, {"top_p", 0.95}, {"eos_token_id", {98, eos2}}}.dump();

  // tally generate: the model's default, a flag that wins, and the defaults turned off.
  Generated g = generate(dir, " -s 7");
  EXPECT_EQ(g.ids, until_eos2);
  EXPECT_EQ(g.finish, "stop");
  g = generate(dir, " -s 7 --top-k 0 --temp 5");
  EXPECT_NE(g.ids, until_eos2);
  g = generate(dir, " --temp 0 --generation-config none");
  EXPECT_EQ(g.ids, until_eos2);  // the stop ids stay: they are the model's vocabulary
  EXPECT_EQ(g.finish, "stop");

  {
    ServeProcess server({"-m", dir});
    ASSERT_TRUE(server.started()) << server.stderr_text();
    const auto greedy_reply = complete(server, {{"temperature", 0}});
    EXPECT_EQ(std::get<1>(greedy_reply), static_cast<int>(stop_at) + 1);  // the eos is counted
    EXPECT_EQ(std::get<2>(greedy_reply), "stop");
    for (int seed : {7, 8, 9}) EXPECT_EQ(complete(server, {{"seed", seed}}), greedy_reply) << seed;
    // An explicit request value wins over the model's top_k.
    int differs = 0;
    for (int seed : {7, 8, 9}) differs += complete(server, {{"seed", seed}, {"top_k", 0}, {"temperature", 5}}) != greedy_reply;
    EXPECT_GT(differs, 0);
    EXPECT_NE(server.stderr_text().find("top_k 1"), std::string::npos) << server.stderr_text();
  }
  {
    ServeProcess server({"-m", dir, "--generation-config", "none"});
    ASSERT_TRUE(server.started()) << server.stderr_text();
    const auto greedy_reply = complete(server, {{"temperature", 0}});
    int differs = 0;  // OpenAI's temperature 1 without a top-k cut: sampled
    for (int seed : {7, 8, 9}) differs += complete(server, {{"seed", seed}, {"temperature", 5}}) != greedy_reply;
    for (int seed : {7, 8, 9}) differs += complete(server, {{"seed", seed}}) != greedy_reply;
    EXPECT_GT(differs, 3);
  }
  auto r = run_command(tally_test::tally_binary() + " serve -m " + shell_quote(dir) + " --port 0 --generation-config /nonexistent");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--generation-config /nonexistent"), std::string::npos) << r.err;
}

}  // namespace
