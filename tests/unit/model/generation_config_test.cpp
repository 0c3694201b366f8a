// The model's default sampling: generation_config.json -> GGUF keys -> SamplingDefaults, the
// precedence they are applied with, and `--generation-config`'s settings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "model/generation_config.h"
#include "support/test_data.h"

namespace {

using nlohmann::json;

tally::io::GgufFile gguf_of(const tally::GenerationConfig& c, std::optional<int32_t> eos) {
  tally::io::GgufWriter w;
  w.set_string("general.architecture", "llama");
  tally::write_generation_config(c, eos, w);
  auto f = tally::io::GgufFile::parse_owned(w.to_bytes(), "test");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

TEST(GenerationConfig, RoundTripsThroughTheGgufKeys) {
  auto c = tally::parse_generation_config(json{{"temperature", 0.7}, {"top_k", 20}, {"top_p", 0.8},
                                               {"min_p", 0.05}, {"repetition_penalty", 1.05},
                                               {"do_sample", true}, {"eos_token_id", {151645, 151643}}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->eos_ids, (std::vector<int32_t>{151645, 151643}));
  const tally::io::GgufFile f = gguf_of(*c, 151645);
  EXPECT_EQ(*f.get_int_array("tokenizer.ggml.eos_token_ids"), (std::vector<int64_t>{151645, 151643}));
  auto d = tally::read_gguf_sampling_defaults(f);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->temperature, 0.7f);
  EXPECT_EQ(d->top_k, 20);
  EXPECT_EQ(d->top_p, 0.8f);
  EXPECT_EQ(d->min_p, 0.05f);
  EXPECT_EQ(d->repetition_penalty, 1.05f);
  EXPECT_FALSE(d->penalty_last_n.has_value());
  EXPECT_EQ(d->describe(), "temperature 0.7, top_k 20, top_p 0.8, min_p 0.05, repetition_penalty 1.05");
}

// What the model names replaces the caller's default; what it does not name stays.
TEST(GenerationConfig, AppliesOnlyWhatTheModelNames) {
  tally::SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.min_p = 0.0f;
  tally::SamplingDefaults d;
  d.temperature = 0.6f;
  d.top_k = 20;
  d.apply_to(p);
  EXPECT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_EQ(p.min_p, 0.0f);
  EXPECT_EQ(p.top_p, tally::SamplingParams{}.top_p);
}

TEST(GenerationConfig, BadValuesAreNamed) {
  for (const json& g : {json{{"top_k", 1.5}}, json{{"temperature", "hot"}}, json{{"top_p", 2.0}},
                        json{{"eos_token_id", {1, -2}}}, json{{"eos_token_id", "x"}}, json::array()}) {
    auto c = tally::parse_generation_config(g);
    EXPECT_FALSE(c.ok()) << g.dump();
    EXPECT_NE(c.status().message().find("generation_config.json"), std::string::npos) << c.status().to_string();
  }
  tally::io::GgufWriter w;
  w.set_string("general.sampling.top_k", "many");
  auto f = tally::io::GgufFile::parse_owned(w.to_bytes(), "test");
  ASSERT_TRUE(f.ok());
  auto d = tally::read_gguf_sampling_defaults(*f);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("general.sampling.top_k"), std::string::npos) << d.status().to_string();
}

TEST(GenerationConfig, SettingAutoNoneOrDirectory) {
  tally::GenerationConfig c;
  c.sampling.temperature = 0.3f;
  const tally::io::GgufFile f = gguf_of(c, std::nullopt);
  EXPECT_EQ(tally::resolve_generation_config("auto", &f)->temperature, 0.3f);
  EXPECT_TRUE(tally::resolve_generation_config("auto", nullptr)->empty());
  EXPECT_TRUE(tally::resolve_generation_config("none", &f)->empty());

  const std::string dir = tally_test::temp_dir() + "/gen_config_dir";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/generation_config.json") << R"({"top_p": 0.5})";
  auto d = tally::resolve_generation_config(dir, &f);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->top_p, 0.5f);
  EXPECT_FALSE(d->temperature.has_value());  // the directory's, not the model's
  auto bad = tally::resolve_generation_config(dir + "/nope", &f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), tally::ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--generation-config"), std::string::npos);
}

}  // namespace
