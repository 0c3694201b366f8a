// The regex word splitting of byte-level BPE.
//
// Llama 3 ("llama-bpe") and Qwen2 have golden vectors but no vocabulary here, so their
// pre-tokenizers are checked on the vector strings without ids: the words must concatenate to
// the text; each word becomes at least one token, so no case may have more words than
// expected ids; where a case has exactly as many words as ids every word is one token, so the
// same word must always get the same id (and different words different ids) across cases;
// and a set of cases (whitespace runs, digit groups, "\t\n" as one word, ...) must be one
// token per word. NOT tested for these two: their merges, ignore_merges on the real Llama 3
// vocabulary, and the exact ids.
#include <gtest/gtest.h>

#include <map>

#include "support/test_data.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/pre_tokenizer_specs.h"
#include "tokenizer_test_util.h"

namespace tally::tok {
namespace {

std::unique_ptr<PreTokenizer> make(std::string_view name) {
  auto spec = find_pre_tokenizer_spec(name);
  EXPECT_TRUE(spec.has_value()) << name;
  if (!spec) return nullptr;
  auto pre = PreTokenizer::create(spec->patterns);
  EXPECT_TRUE(pre.ok()) << pre.status().to_string();
  return pre.ok() ? std::move(pre).value() : nullptr;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2SplitsContractionsWordsAndSpaceRuns) {
  auto pre = make("gpt-2");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->split_words("I've been 'told"), (Words{"I", "'ve", " been", " '", "told"}));
  // \s+(?!\S) leaves the last space of a run to the next word; at the end it takes all.
  EXPECT_EQ(pre->split_words("a   b  "), (Words{"a", "  ", " b", "  "}));
  EXPECT_EQ(pre->split_words("x\t\ty"), (Words{"x", "\t", "\t", "y"}));
  EXPECT_EQ(pre->split_words("3.14 $5"), (Words{"3", ".", "14", " $", "5"}));
  EXPECT_EQ(pre->split_words("héllo wörld"), (Words{"héllo", " wörld"}));
  EXPECT_EQ(pre->split_words(""), Words{});
  // Case-sensitive contractions (GPT-2 has no (?i)).
  EXPECT_EQ(pre->split_words("'RE"), (Words{"'", "RE"}));
}

TEST(PreTokenizer, UnknownNamesAreNotGuessed) {
  EXPECT_FALSE(find_pre_tokenizer_spec("no-such-pre").has_value());
  EXPECT_TRUE(find_pre_tokenizer_spec("default").has_value());
  EXPECT_TRUE(find_pre_tokenizer_spec("llama-bpe")->ignore_merges);
  EXPECT_FALSE(find_pre_tokenizer_spec("qwen2")->ignore_merges);
}

TEST(PreTokenizer, SequencedRegexesCutEachOthersPieces) {
  auto falcon = make("falcon");
  ASSERT_NE(falcon, nullptr);
  // Punctuation runs first, then GPT-2's regex, then digits in threes from the left.
  EXPECT_EQ(falcon->split_words("x=12345!?"), (Words{"x", "=", "123", "45", "!?"}));
  auto starcoder = make("starcoder");
  ASSERT_NE(starcoder, nullptr);
  EXPECT_EQ(starcoder->split_words("a 123"), (Words{"a", " ", "1", "2", "3"}));
  auto coder = make("deepseek-coder");
  ASSERT_NE(coder, nullptr);
  EXPECT_EQ(coder->split_words("ab\r\ncd 7"), (Words{"ab", "\r", "\n", "cd", " ", "7"}));
  auto llm = make("deepseek-llm");
  ASSERT_NE(llm, nullptr);
  // \s+$ sees the end of each piece, not only of the text.
  EXPECT_EQ(llm->split_words("hi  \nyo"), (Words{"hi", "  ", "\n", "yo"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndKeepsNewlinesWithSpaces) {
  auto pre = make("llama-bpe");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->split_words("1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(pre->split_words("We'Ve a'lL 'RE"), (Words{"We", "'Ve", " a", "'lL", " '", "RE"}));
  EXPECT_EQ(pre->split_words("\t\n"), Words{"\t\n"});
  EXPECT_EQ(pre->split_words("x  \n\ny"), (Words{"x", "  \n\n", "y"}));
  EXPECT_EQ(pre->split_words("!!\n\nok"), (Words{"!!\n\n", "ok"}));
  EXPECT_EQ(pre->split_words("(hello"), Words{"(hello"});
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  auto pre = make("qwen2");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->split_words("x1234"), (Words{"x", "1", "2", "3", "4"}));
  EXPECT_EQ(pre->split_words("I'M here"), (Words{"I", "'M", " here"}));
}

TEST(PreTokenizer, SurvivesLongRunsAndEmptyMatches) {
  auto pre = make("llama-bpe");
  ASSERT_NE(pre, nullptr);
  const std::string spaces(200000, ' ');
  const auto words = pre->split_words(spaces + "x");
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0].size(), spaces.size() - 1);
  // A pattern that can match empty must still make progress and cover the text.
  auto empty = PreTokenizer::create({R"re(a*)re"});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->split_words("baab"), (Words{"b", "aa", "b"}));
}

TEST(PreTokenizer, BadPatternIsAnError) {
  auto bad = PreTokenizer::create({R"re(\p{Nope}+)re"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\\p{Nope}+"), std::string::npos);
}

// See the file comment for what these checks can and cannot show.
void check_against_vectors(const char* pre_name, const char* vocab_name,
                           const std::vector<size_t>& one_token_per_word) {
  TALLY_REQUIRE_SHARED(std::string(tally_test::kVocabDir) + "/vectors-only/ggml-vocab-" +
                           vocab_name + ".gguf.inp",
                       inp);
  const auto inputs = tally_test::read_vocab_inputs(inp);
  const auto outputs = tally_test::read_vocab_outputs(inp.substr(0, inp.size() - 3) + "out");
  ASSERT_EQ(inputs.size(), outputs.size());
  auto pre = make(pre_name);
  ASSERT_NE(pre, nullptr);
  std::map<std::string, int32_t> id_of_word;
  std::map<int32_t, std::string> word_of_id;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "case " << i << " \"" << tally_test::escaped(inputs[i])
                                    << "\"");
    const Words words = pre->split_words(inputs[i]);
    std::string joined;
    for (const auto& w : words) joined += w;
    EXPECT_EQ(joined, inputs[i]);
    EXPECT_LE(words.size(), outputs[i].size());
    if (words.size() != outputs[i].size()) continue;
    for (size_t k = 0; k < words.size(); ++k) {
      auto [w, new_word] = id_of_word.emplace(words[k], outputs[i][k]);
      EXPECT_EQ(w->second, outputs[i][k]) << "word \"" << tally_test::escaped(words[k]) << "\"";
      auto [d, new_id] = word_of_id.emplace(outputs[i][k], words[k]);
      EXPECT_EQ(d->second, words[k]) << "id " << outputs[i][k];
    }
  }
  for (size_t i : one_token_per_word) {
    EXPECT_EQ(pre->split_words(inputs.at(i)).size(), outputs.at(i).size())
        << "case " << i << " \"" << tally_test::escaped(inputs.at(i)) << "\"";
  }
}

TEST(PreTokenizer, Llama3AgreesWithLlamaBpeVectors) {
  // Whitespace runs, "\t\n", "Hello world" variants, "    Hello\n    Hello", " (", "\n =",
  // and every digit run (groups of three are single tokens in Llama 3's vocabulary).
  check_against_vectors("llama-bpe", "llama-bpe",
                        {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 23, 24, 25, 26, 27,
                         28, 29, 30, 34, 35, 36, 37, 38, 39, 40, 41, 42});
}

TEST(PreTokenizer, Qwen2AgreesWithQwen2Vectors) {
  check_against_vectors("qwen2", "qwen2",
                        {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 23, 24, 25, 26, 27,
                         28, 29, 30, 34, 35, 36, 37, 38, 39, 40, 41, 42});
}

}  // namespace
}  // namespace tally::tok
