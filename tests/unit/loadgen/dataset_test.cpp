// Datasets are repeatable per seed and reach the asked lengths under the tokenizer given
// (a character tokenizer whose cuts re-tokenize differently exercises the length search);
// shared-prefix and multi-turn have their shapes; ShareGPT files load, filter and fail
// with the file and entry named.
#include "loadgen/dataset.h"

#include <gtest/gtest.h>

#include <fstream>

#include "loadgen/sharegpt_dataset.h"
#include "support/test_data.h"

namespace tally::loadgen {
namespace {

// One token per character, except that "th" is one token: a cut between 't' and 'h' decodes
// to text that re-tokenizes to a different count, as real BPE/SPM cuts do.
class CharTokenizer final : public PromptTokenizer {
 public:
  Result<std::vector<int32_t>> encode(const std::string& text) override {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 2, "th") == 0) {
        ids.push_back(1000);
        ++i;
      } else {
        ids.push_back(static_cast<unsigned char>(text[i]));
      }
    }
    return ids;
  }
  Result<std::string> decode(const std::vector<int32_t>& ids) override {
    std::string out;
    for (int32_t id : ids)
      out += id == 1000 ? std::string("th") : std::string(1, static_cast<char>(id));
    return out;
  }
  bool exact() const override { return true; }
  std::string description() const override { return "chars"; }
};

int count_tokens(PromptTokenizer& tok, const std::string& text) {
  return static_cast<int>(tok.encode(text)->size());
}

TEST(Dataset, RandomIsRepeatablePerSeedWithExactLengths) {
  CharTokenizer tok;
  SyntheticConfig c;
  c.num_prompts = 12;
  c.input_len = 40;
  c.output_len = 9;
  c.range_ratio = 0.5;
  c.seed = 3;
  auto a = make_synthetic_dataset(c, tok);
  auto b = make_synthetic_dataset(c, tok);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->n_requests(), 12);
  EXPECT_TRUE(a->exact_lengths);
  bool lengths_vary = false;
  for (size_t i = 0; i < a->conversations.size(); ++i) {
    const DatasetTurn& t = a->conversations[i].turns[0];
    EXPECT_EQ(t.text, b->conversations[i].turns[0].text);
    EXPECT_EQ(count_tokens(tok, t.text), t.text_len);
    EXPECT_GE(t.text_len, 20);
    EXPECT_LE(t.text_len, 60);
    EXPECT_GE(t.output_len, 4);
    EXPECT_LE(t.output_len, 14);
    lengths_vary = lengths_vary || t.text_len != a->conversations[0].turns[0].text_len;
  }
  EXPECT_TRUE(lengths_vary);
  c.seed = 4;
  auto other = make_synthetic_dataset(c, tok);
  EXPECT_NE(other->conversations[0].turns[0].text, a->conversations[0].turns[0].text);
}

TEST(Dataset, RandomPrefixIsSharedAndCounted) {
  CharTokenizer tok;
  SyntheticConfig c;
  c.num_prompts = 4;
  c.input_len = 20;
  c.prefix_len = 30;
  auto d = make_synthetic_dataset(c, tok);
  ASSERT_TRUE(d.ok());
  const std::string head = d->conversations[0].turns[0].text.substr(0, 25);
  for (const auto& conv : d->conversations) {
    EXPECT_EQ(conv.turns[0].text.substr(0, 25), head);
    EXPECT_EQ(conv.turns[0].text_len, 50);
    EXPECT_EQ(count_tokens(tok, conv.turns[0].text), 50);
  }
}

TEST(Dataset, RepeatSaysOnePassageThreeTimes) {
  CharTokenizer tok;
  SyntheticConfig c;
  c.name = "repeat";
  c.num_prompts = 3;
  c.input_len = 60;
  auto d = make_synthetic_dataset(c, tok);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_EQ(d->n_requests(), 3);
  for (const auto& conv : d->conversations) {
    const std::string& text = conv.turns[0].text;
    const size_t third = (text.size() - 2) / 3;
    const std::string passage = text.substr(0, third);
    EXPECT_EQ(text, passage + ' ' + passage + ' ' + passage);
    EXPECT_EQ(conv.turns[0].text_len, count_tokens(tok, text));
  }
}

TEST(Dataset, SharedPrefixCyclesItsGroupsSystemPrompts) {
  CharTokenizer tok;
  SyntheticConfig c;
  c.name = "shared-prefix";
  c.num_prompts = 6;
  c.input_len = 10;
  c.prefix_len = 64;
  c.prefix_groups = 2;
  auto d = make_synthetic_dataset(c, tok);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->conversations.size(), 6u);
  EXPECT_EQ(d->conversations[0].system, d->conversations[2].system);
  EXPECT_NE(d->conversations[0].system, d->conversations[1].system);
  EXPECT_EQ(count_tokens(tok, d->conversations[0].system), 64);
  EXPECT_NE(d->conversations[0].turns[0].text, d->conversations[2].turns[0].text);
  EXPECT_EQ(d->conversations[0].turns[0].text_len, 74);
}

TEST(Dataset, MultiTurnSplitsRequestsIntoConversations) {
  CharTokenizer tok;
  SyntheticConfig c;
  c.name = "multi-turn";
  c.num_prompts = 7;
  c.input_len = 8;
  c.turns = 3;
  auto d = make_synthetic_dataset(c, tok);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->n_requests(), 7);
  ASSERT_EQ(d->conversations.size(), 3u);
  EXPECT_EQ(d->conversations[2].turns.size(), 1u);
}

TEST(Dataset, WordTokenizerSaysItIsApproximate) {
  auto tok = make_word_tokenizer("no /tokenize");
  SyntheticConfig c;
  c.num_prompts = 2;
  c.input_len = 12;
  auto d = make_synthetic_dataset(c, *tok);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->exact_lengths);
  EXPECT_NE(d->tokenizer.find("approximate"), std::string::npos);
  EXPECT_EQ(count_tokens(*tok, d->conversations[0].turns[0].text), 12);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = tally_test::temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Sharegpt, LoadsShufflesAndFilters) {
  const std::string path = write_temp("sg.json", R"([
    {"id": "a", "conversations": [{"from": "human", "value": "tell me a long story please"},
                                  {"from": "gpt", "value": "once upon a time there was"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "only one turn"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "hi"},
                                  {"from": "gpt", "value": "a reply that is long enough"}]},
    {"id": "d", "conversations": [{"from": "human", "value": "what is the sky made of"},
                                  {"from": "gpt", "value": "air and light and water"}]}
  ])");
  auto pairs = load_sharegpt_pairs(path);
  ASSERT_TRUE(pairs.ok()) << pairs.status().message();
  EXPECT_EQ(pairs->size(), 3u);  // "b" has one turn
  auto tok = make_word_tokenizer("test");
  SharegptConfig c;
  c.num_prompts = 10;
  auto d = make_sharegpt_dataset(*pairs, c, *tok);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->n_requests(), 2);  // "c": a prompt of 1 word is under 4 tokens
  EXPECT_EQ(d->notes.size(), 2u);
  for (const auto& conv : d->conversations) EXPECT_GE(conv.turns[0].output_len, 4);
  c.output_len = 3;
  auto fixed = make_sharegpt_dataset(*pairs, c, *tok);
  for (const auto& conv : fixed->conversations) EXPECT_EQ(conv.turns[0].output_len, 3);
}

TEST(Sharegpt, BadFilesNameTheProblem) {
  auto missing = load_sharegpt_pairs("/nonexistent/x.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  auto not_json = load_sharegpt_pairs(write_temp("bad.json", "[{"));
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("not valid JSON"), std::string::npos);
  auto no_conv =
      load_sharegpt_pairs(write_temp("bad2.json", R"([{"conversations": []}, {"x": 1}])"));
  ASSERT_FALSE(no_conv.ok());
  EXPECT_NE(no_conv.status().message().find("entry 1"), std::string::npos);
}

}  // namespace
}  // namespace tally::loadgen
