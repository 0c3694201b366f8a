#include "tokenizer/streaming_detokenizer.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"

namespace tally {
namespace {

constexpr int32_t kByte0 = 3;

// SPM: <unk>, <s>, </s>, 256 byte tokens, then "▁Hello" (259), "▁" (260), "a" (261).
std::unique_ptr<Tokenizer> spm_tokenizer(bool add_space_prefix = true) {
  TokenizerVocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(fmt::format("<0x{:02X}>", b));
    v.types.push_back(TokenType::kByte);
  }
  for (const char* t : {"\xE2\x96\x81Hello", "\xE2\x96\x81", "a"}) {
    v.tokens.emplace_back(t);
    v.types.push_back(TokenType::kNormal);
  }
  v.add_space_prefix = add_space_prefix;
  auto tok = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

TEST(StreamingDetokenizer, HoldsBackSplitCharactersUntilComplete) {
  auto tok = spm_tokenizer();
  StreamingDetokenizer d(*tok);
  EXPECT_EQ(d.push(kByte0 + 0xE2), "");
  EXPECT_EQ(d.push(kByte0 + 0x96), "");
  EXPECT_EQ(d.push(kByte0 + 0x81), "\xE2\x96\x81");
  EXPECT_EQ(d.push(261), "a");
  // A 4-byte emoji over four tokens, then plain text.
  EXPECT_EQ(d.push(kByte0 + 0xF0), "");
  EXPECT_EQ(d.push(kByte0 + 0x9F), "");
  EXPECT_EQ(d.push(kByte0 + 0xA6), "");
  EXPECT_EQ(d.push(kByte0 + 0x99), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDetokenizer, ReplacesBytesThatCanNeverBeValid) {
  auto tok = spm_tokenizer();
  StreamingDetokenizer d(*tok);
  EXPECT_EQ(d.push(kByte0 + 0xFF), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push(kByte0 + 0x80), "\xEF\xBF\xBD");  // stray continuation byte
  EXPECT_EQ(d.push(kByte0 + 0xE2), "");
  EXPECT_EQ(d.push(261), "\xEF\xBF\xBD" "a");  // the cut character, then the text
  EXPECT_EQ(d.push(kByte0 + 0xE2), "");
  EXPECT_EQ(d.push(kByte0 + 0x28), "\xEF\xBF\xBD(");  // E2 28: 28 is no continuation byte
}

TEST(StreamingDetokenizer, FlushReportsAnUnfinishedCharacter) {
  auto tok = spm_tokenizer();
  StreamingDetokenizer d(*tok);
  EXPECT_EQ(d.push(kByte0 + 0xE2), "");
  EXPECT_EQ(d.push(kByte0 + 0x96), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.flush(), "");
  EXPECT_EQ(d.push(261), "a");
  EXPECT_EQ(d.push(kByte0 + 0xE2), "");
  d.reset();
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDetokenizer, StripsTheSpaceAfterBosForSpm) {
  auto tok = spm_tokenizer();
  StreamingDetokenizer d(*tok);
  EXPECT_EQ(d.push(1), "");  // BOS prints nothing
  EXPECT_EQ(d.push(259), "Hello");
  EXPECT_EQ(d.push(259), " Hello");
  EXPECT_EQ(d.push(2), "");
  d.reset();
  EXPECT_EQ(d.push(259), " Hello");  // no BOS, no strip (as run.c)
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(kByte0 + ' '), "");  // a byte-token space right after BOS goes too
  EXPECT_EQ(d.push(260), " ");

  auto no_prefix = spm_tokenizer(/*add_space_prefix=*/false);
  StreamingDetokenizer keep(*no_prefix);
  EXPECT_EQ(keep.push(1), "");
  EXPECT_EQ(keep.push(259), " Hello");
}

TEST(StreamingDetokenizer, JoinsByteLevelBpeTokensCutInsideACharacter) {
  TokenizerVocab v;
  v.kind = TokenizerKind::kBpe;
  for (int b = 0; b < 256; ++b) {
    v.tokens.emplace_back(tok::byte_level_char(static_cast<uint8_t>(b)));
  }
  auto tok = Tokenizer::from_vocab(std::move(v));
  ASSERT_TRUE(tok.ok());
  StreamingDetokenizer d(**tok);
  EXPECT_EQ(d.push(0xC3), "");
  EXPECT_EQ(d.push(0xA9), "\xC3\xA9");
  EXPECT_EQ(d.push(' '), " ");  // no space stripping for BPE
}

}  // namespace
}  // namespace tally
