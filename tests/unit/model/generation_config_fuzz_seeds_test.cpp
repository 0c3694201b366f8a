// The generation_config fuzzer's seeds run through its harness (tests/fuzz/
// generation_config_input.h) in the normal build: the real models' files are accepted and
// round-trip through the GGUF keys, the seeds named refused_* are refused. Also the inputs the
// harness's checks were written against (values past int64 / float, nesting deeper than a
// recursive copy or dump survives).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../../fuzz/generation_config_input.h"
#include "support/test_data.h"

namespace tally {
namespace {

using fuzz::GenerationConfigFuzzOutcome;

GenerationConfigFuzzOutcome run(const std::string& text) {
  return fuzz::generation_config_fuzz_one(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

TEST(GenerationConfigFuzzSeeds, EachSeedIsAcceptedOrRefusedAsNamed) {
  int accepted = 0, refused = 0;
  for (const auto& e : std::filesystem::directory_iterator(
           tally_test::repo_path("tests/fuzz/corpus/generation_config"))) {
    const std::string name = e.path().filename().string();
    const bool want_refused = name.starts_with("refused_");
    EXPECT_EQ(run(tally_test::read_file(e.path().string())),
              want_refused ? GenerationConfigFuzzOutcome::kRefused : GenerationConfigFuzzOutcome::kAccepted)
        << name;
    ++(want_refused ? refused : accepted);
  }
  EXPECT_GE(accepted, 5);
  EXPECT_GE(refused, 3);
}

// nlohmann keeps 2^64-1 as an unsigned, which get<int64_t> wrapped to -1: top_k -1 was accepted.
TEST(GenerationConfigFuzzSeeds, IntegersPastInt64AreRefusedNotWrapped) {
  for (const char* text : {R"({"top_k": 18446744073709551615})", R"({"top_k": 9223372036854775808})",
                           R"({"eos_token_id": 18446744073709551615})", R"({"eos_token_id": [2147483648]})"}) {
    auto c = parse_generation_config_text(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), ErrorCode::kFormat);
  }
  EXPECT_EQ(parse_generation_config_text(R"({"top_k": 2147483647})")->sampling.top_k, 2147483647);
}

TEST(GenerationConfigFuzzSeeds, FloatsPastFloatRangeAreRefused) {
  auto c = parse_generation_config_text(R"({"repetition_penalty": 1e39})");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("repetition_penalty"), std::string::npos) << c.status().to_string();
}

// A deeply nested eos_token_id is refused by its type, without copying or printing it (both
// recurse once per level and ran out of stack at this depth).
TEST(GenerationConfigFuzzSeeds, DeepNestingIsRefusedWithoutRecursion) {
  const size_t depth = 1'000'000;
  for (const char* key : {"eos_token_id", "top_p"}) {
    const std::string text = std::string("{\"") + key + "\": " + std::string(depth, '[') + std::string(depth, ']') + "}";
    auto c = parse_generation_config_text(text);
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_NE(c.status().message().find("array"), std::string::npos) << c.status().to_string();
  }
  EXPECT_EQ(run("{\"eos_token_id\": {\"a\": " + std::string(depth, '[') + std::string(depth, ']') + "}}"),
            GenerationConfigFuzzOutcome::kRefused);
}

}  // namespace
}  // namespace tally
