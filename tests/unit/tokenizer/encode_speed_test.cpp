// Encoding must stay close to linear: 100 KB of mixed text, one 100 KB word and 100 KB of
// spaces each encode well under a second (a quadratic merge loop takes minutes on these).
#include <gtest/gtest.h>

#include <chrono>

#include "support/test_data.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace tally {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr double kBudgetSeconds = 5.0;  // ASan + UBSan slow everything down several times
#else
constexpr double kBudgetSeconds = 1.0;
#endif
constexpr size_t kTextBytes = 100 * 1024;

std::string repeat_to(const std::string& unit, size_t bytes) {
  std::string out;
  while (out.size() < bytes) out += unit;
  return out;
}

class EncodeSpeedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EncodeSpeedTest, HundredKilobytesEncodeFast) {
  TALLY_REQUIRE_SHARED(std::string(tally_test::kVocabDir) + "/ggml-vocab-" + GetParam() + ".gguf",
                       gguf);
  auto tok = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  std::string mixed;
  for (const auto& s : tally_test::read_vocab_inputs(gguf + ".inp")) mixed += s + "\n";
  for (const std::string& text :
       {repeat_to(mixed, kTextBytes), std::string(kTextBytes, 'a'), std::string(kTextBytes, ' ')}) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = tok->encode(text, true, false);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, kBudgetSeconds) << tally_test::escaped(text.substr(0, 20));
    EXPECT_GT(ids.size(), 1u);
    EXPECT_EQ(tok->decode(ids), text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, EncodeSpeedTest,
                         ::testing::Values("llama-spm", "gpt-2", "deepseek-llm"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tally
