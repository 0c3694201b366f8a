// The TinyStories 260K tokenizer (512 tokens) against llama2.c's run.c: prompt encoding and
// the printed text of recorded generations (reference/*.ids.txt and *.txt).
#include <gtest/gtest.h>

#include <sstream>

#include "support/test_data.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace tally {
namespace {

struct RunRecord {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> sampled_ids;
};

std::vector<int32_t> parse_ids_after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  EXPECT_NE(at, std::string::npos) << label;
  std::vector<int32_t> ids;
  if (at == std::string::npos) return ids;
  std::istringstream line(text.substr(at + label.size(), text.find('\n', at) - at - label.size()));
  int32_t id = 0;
  while (line >> id) ids.push_back(id);
  return ids;
}

RunRecord read_record(const std::string& path) {
  const std::string text = tally_test::read_file(path);
  return {parse_ids_after(text, "prompt_ids:"), parse_ids_after(text, "sampled_ids:")};
}

std::unique_ptr<Tokenizer> load_tok512(const std::string& path) {
  auto vocab = read_llama2c_tokenizer(path, 512);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

struct PromptCase {
  const char* record;  // reference/<record>.ids.txt
  const char* prompt;  // the -i argument of run.c
};

constexpr PromptCase kPrompts[] = {
    {"stories260K_greedy_empty", ""},
    {"stories260K_greedy_once_upon_a_time", "Once upon a time"},
    {"stories260K_greedy_lily_and_tom", "Lily and Tom"},
    {"stories260K_greedy_the_cat_sat_on_the_mat", "The cat sat on the mat"},
    {"stories260K_greedy_one_day_a_little_girl_named", "One day, a little girl named"},
};

TEST(Stories260K, EncodesPromptsLikeRunC) {
  TALLY_REQUIRE_SHARED("models/stories260K/tok512.bin", bin);
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", gguf);
  auto from_bin = load_tok512(bin);
  auto from_gguf = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(from_bin, nullptr);
  ASSERT_NE(from_gguf, nullptr);
  for (const PromptCase& c : kPrompts) {
    SCOPED_TRACE(c.record);
    const RunRecord rec = read_record(tally_test::shared_dir() + "/models/reference/" +
                                      c.record + ".ids.txt");
    ASSERT_FALSE(rec.prompt_ids.empty());
    EXPECT_EQ(from_bin->encode(c.prompt, true, false), rec.prompt_ids);
    EXPECT_EQ(from_gguf->encode(c.prompt, true, false), rec.prompt_ids);
  }
}

// tok512.bin converted as llama.cpp's converter does equals the vocabulary of its GGUF.
TEST(Stories260K, Llama2cVocabularyEqualsTheGgufOne) {
  TALLY_REQUIRE_SHARED("models/stories260K/tok512.bin", bin);
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", gguf);
  auto from_bin = load_tok512(bin);
  auto from_gguf = tally_test::load_gguf_tokenizer(gguf);
  ASSERT_NE(from_bin, nullptr);
  ASSERT_NE(from_gguf, nullptr);
  ASSERT_EQ(from_bin->n_vocab(), 512);
  ASSERT_EQ(from_gguf->n_vocab(), 512);
  for (int32_t id = 0; id < 512; ++id) {
    EXPECT_EQ(from_bin->piece(id), from_gguf->piece(id)) << id;
    EXPECT_EQ(from_bin->score(id), from_gguf->score(id)) << id;
    EXPECT_EQ(from_bin->token_type(id), from_gguf->token_type(id)) << id;
  }
  EXPECT_EQ(from_gguf->bos(), 1);
  EXPECT_EQ(from_gguf->eos(), 2);
  EXPECT_TRUE(from_gguf->add_bos());
  EXPECT_TRUE(from_gguf->add_space_prefix());
  EXPECT_TRUE(from_gguf->is_eog(2));
  EXPECT_FALSE(from_gguf->is_eog(1));
}

// run.c prints every token after BOS (the prompt's too), dropping the space of the piece that
// follows BOS, then a newline; generation stops when the model samples BOS.
TEST(Stories260K, StreamedTextEqualsRunCOutput) {
  TALLY_REQUIRE_SHARED("models/stories260K/tok512.bin", bin);
  auto tok = load_tok512(bin);
  ASSERT_NE(tok, nullptr);
  const std::string ref_dir = tally_test::shared_dir() + "/models/reference/";
  for (const char* name : {"stories260K_greedy_lily_and_tom", "stories260K_greedy_empty",
                           "stories260K_t1.0_p0.9_s42_lily_and_tom",
                           "stories260K_greedy_one_day_a_little_girl_named"}) {
    SCOPED_TRACE(name);
    const RunRecord rec = read_record(ref_dir + name + ".ids.txt");
    std::vector<int32_t> ids = rec.prompt_ids;
    ids.insert(ids.end(), rec.sampled_ids.begin(), rec.sampled_ids.end());
    if (ids.size() > 1 && ids.back() == 1) ids.pop_back();
    StreamingDetokenizer detok(*tok);
    std::string text;
    for (int32_t id : ids) text += detok.push(id);
    text += detok.flush();
    EXPECT_EQ(text + "\n", tally_test::read_file(ref_dir + name + ".txt"));
  }
}

TEST(Llama2cTokenizer, ConvertsPiecesAndRejectsTruncatedFiles) {
  // max_token_length 6; "<unk>", "\n<s>\n", "\n</s>\n", " a", all with score 0.
  std::vector<uint8_t> bin = {6, 0, 0, 0};
  for (std::string_view piece : {"<unk>", "\n<s>\n", "\n</s>\n", " a"}) {
    for (int i = 0; i < 4; ++i) bin.push_back(0);
    bin.push_back(static_cast<uint8_t>(piece.size()));
    for (int i = 0; i < 3; ++i) bin.push_back(0);
    bin.insert(bin.end(), piece.begin(), piece.end());
  }
  auto vocab = parse_llama2c_tokenizer(bin, 4);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->tokens,
            (std::vector<std::string>{"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a"}));
  EXPECT_EQ(vocab->types, (std::vector<TokenType>{TokenType::kUnknown, TokenType::kControl,
                                                  TokenType::kControl, TokenType::kNormal}));
  auto tok = Tokenizer::from_vocab(std::move(vocab).value());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("a", true, false), (std::vector<int32_t>{1, 3}));

  auto cut = parse_llama2c_tokenizer(std::span<const uint8_t>(bin.data(), bin.size() - 1), 4);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), ErrorCode::kFormat);
}

}  // namespace
}  // namespace tally
