// The SPM tokenizer on small hand-made vocabularies: merge order, byte fallback, the space
// prefix, BOS/EOS and special tokens.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tokenizer/tokenizer.h"

namespace tally {
namespace {

constexpr int32_t kByte0 = 3;  // <0x00>; ids 0..2 are <unk>, <s>, </s>

struct Piece {
  const char* text;
  float score;
  TokenType type = TokenType::kNormal;
};

// <unk>, <s>, </s>, the 256 byte tokens, then `pieces` from id 259 on.
TokenizerVocab spm_vocab(std::initializer_list<Piece> pieces) {
  TokenizerVocab v;
  v.kind = TokenizerKind::kSpm;
  auto add = [&](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenType::kByte);
  for (const Piece& p : pieces) add(p.text, p.score, p.type);
  return v;
}

std::unique_ptr<Tokenizer> build(TokenizerVocab v) {
  auto tok = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

using Ids = std::vector<int32_t>;

TEST(SpmTokenizer, MergesTheHighestScoringPairFirst) {
  // ids: a 259, b 260, c 261, ab 262, bc 263
  auto bc_first = spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -2}});
  bc_first.add_space_prefix = false;
  EXPECT_EQ(build(std::move(bc_first))->encode("abc", false, false), (Ids{259, 263}));
  auto ab_first = spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -5}});
  ab_first.add_space_prefix = false;
  EXPECT_EQ(build(std::move(ab_first))->encode("abc", false, false), (Ids{262, 261}));
}

TEST(SpmTokenizer, TakesTheLeftmostPairOnEqualScores) {
  auto v = spm_vocab({{"a", -1}, {"aa", -2}, {"b", -1}, {"ab", -3}, {"ba", -3}});
  v.add_space_prefix = false;
  auto tok = build(std::move(v));
  EXPECT_EQ(tok->encode("aaa", false, false), (Ids{260, 259}));
  EXPECT_EQ(tok->encode("bab", false, false), (Ids{263, 261}));
  EXPECT_EQ(tok->encode("aaaaa", false, false), (Ids{260, 260, 259}));
}

TEST(SpmTokenizer, BuildsLongTokensThroughIntermediateMerges) {
  auto v = spm_vocab({{"\xE2\x96\x81", -1}, {"h", -1}, {"i", -1}, {"\xE2\x96\x81h", -3},
                      {"\xE2\x96\x81hi", -4}});
  auto tok = build(std::move(v));
  EXPECT_EQ(tok->encode("hi", false, false), (Ids{263}));      // "▁hi" (space prefix)
  EXPECT_EQ(tok->encode("hi hi", false, false), (Ids{263, 263}));
  EXPECT_EQ(tok->decode(Ids{263, 263}), "hi hi");
  EXPECT_EQ(tok->decode(Ids{259, 263}), " hi");  // only the prefixed space is dropped
}

TEST(SpmTokenizer, FallsBackToBytesForUnknownCharacters) {
  auto v = spm_vocab({{"a", -1}});
  v.add_space_prefix = false;
  auto tok = build(std::move(v));
  // "é" = C3 A9 is not a piece.
  EXPECT_EQ(tok->encode("a\xC3\xA9", false, false), (Ids{259, kByte0 + 0xC3, kByte0 + 0xA9}));
  EXPECT_EQ(tok->decode(Ids{259, kByte0 + 0xC3, kByte0 + 0xA9}), "a\xC3\xA9");
}

TEST(SpmTokenizer, InvalidUtf8BecomesByteTokensAndRoundTrips) {
  auto v = spm_vocab({{"a", -1}});
  v.add_space_prefix = false;
  auto tok = build(std::move(v));
  const std::string bad = "\xFF" "a\xE2\x96" "a\x80";
  const Ids ids = tok->encode(bad, false, false);
  EXPECT_EQ(ids, (Ids{kByte0 + 0xFF, 259, kByte0 + 0xE2, kByte0 + 0x96, 259, kByte0 + 0x80}));
  EXPECT_EQ(tok->decode(ids), bad);
}

TEST(SpmTokenizer, AddsBosAndEosAsConfigured) {
  auto tok = build(spm_vocab({{"\xE2\x96\x81", -1}, {"x", -1}}));
  EXPECT_TRUE(tok->add_bos());
  EXPECT_FALSE(tok->add_eos());
  EXPECT_EQ(tok->encode("x", true, false), (Ids{1, 259, 260}));
  EXPECT_EQ(tok->encode("x", false, false), (Ids{259, 260}));
  EXPECT_EQ(tok->encode("", true, false), (Ids{1}));
  EXPECT_EQ(tok->encode("", false, false), Ids{});
  auto v = spm_vocab({{"x", -1}});
  v.add_bos = false;
  v.add_eos = true;
  v.add_space_prefix = false;
  auto eos_only = build(std::move(v));
  EXPECT_EQ(eos_only->encode("x", true, false), (Ids{259, 2}));
  EXPECT_EQ(eos_only->decode(Ids{259, 2}), "x");
  EXPECT_EQ(eos_only->decode(Ids{259, 2}, /*skip_special=*/false), "x</s>");
}

TEST(SpmTokenizer, ControlTokensOnlyWithParseSpecial) {
  auto tok = build(spm_vocab({{"\xE2\x96\x81", -1}, {"a", -1}, {"\xE2\x96\x81" "a", -2},
                              {"<", -1}, {"s", -1}, {">", -1}}));
  // parse_special: "<s>" is BOS, and the text after it gets its own space prefix.
  EXPECT_EQ(tok->encode("a<s>a", false, true), (Ids{261, 1, 261}));
  // Otherwise it is plain text and never becomes the control token, not even through merges.
  const Ids plain = tok->encode("a<s>a", false, false);
  EXPECT_EQ(plain, (Ids{261, 262, 263, 264, 260}));
  EXPECT_EQ(tok->decode(plain), "a<s>a");
}

TEST(SpmTokenizer, UserDefinedTokensAreAlwaysRecognised) {
  auto tok = build(spm_vocab({{"\xE2\x96\x81", -1},
                              {"a", -1},
                              {"<tool>", 0, TokenType::kUserDefined},
                              {"<tool>x", 0, TokenType::kUserDefined}}));
  EXPECT_EQ(tok->encode("<tool>", false, false), (Ids{261}));
  EXPECT_EQ(tok->encode("<tool>x", false, false), (Ids{262}));  // longest match wins
  EXPECT_EQ(tok->token_bytes(261), "<tool>");
}

TEST(SpmTokenizer, TokenBytesAndPieces) {
  auto tok = build(spm_vocab({{"\xE2\x96\x81" "hi\xE2\x96\x81", -1}}));
  EXPECT_EQ(tok->piece(259), "\xE2\x96\x81" "hi\xE2\x96\x81");
  EXPECT_EQ(tok->token_bytes(259), " hi ");
  EXPECT_EQ(tok->token_bytes(kByte0 + 0x41), "A");
  EXPECT_EQ(tok->token_bytes(1), "");
  EXPECT_EQ(tok->token_bytes(1, /*render_special=*/true), "<s>");
  EXPECT_EQ(tok->token_bytes(0, true), "<unk>");
  EXPECT_EQ(tok->piece(-1), "");
  EXPECT_EQ(tok->piece(10'000), "");
  EXPECT_EQ(tok->token_bytes(10'000), "");
  EXPECT_EQ(tok->token_id("<s>"), 1);
  EXPECT_EQ(tok->token_id("nope"), -1);
}

TEST(SpmTokenizer, EndOfGenerationTokens) {
  auto v = spm_vocab({{"<|im_end|>", 0}, {"<|eot_id|>", 0, TokenType::kControl}, {"x", 0}});
  auto tok = build(std::move(v));
  EXPECT_TRUE(tok->is_eog(2));    // EOS
  EXPECT_TRUE(tok->is_eog(259));  // by its text; becomes a control token as in llama.cpp
  EXPECT_TRUE(tok->is_control(259));
  EXPECT_TRUE(tok->is_eog(260));
  EXPECT_EQ(tok->eot(), 260);  // <|eot_id|> comes first in llama.cpp's EOT list
  EXPECT_FALSE(tok->is_eog(261));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(-1));
}

TEST(SpmTokenizer, MetadataIdsOutOfRangeFallBackToDefaults) {
  auto v = spm_vocab({});
  v.bos_id = -1;
  v.eos_id = 99'999;
  auto tok = build(std::move(v));
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  TokenizerVocab tiny;
  tiny.tokens = {"a", "b"};
  auto small = build(std::move(tiny));
  EXPECT_EQ(small->eos(), -1);  // default 2 is past the vocabulary: none
  EXPECT_FALSE(small->add_bos() && small->bos() < 0);
}

TEST(SpmTokenizer, RejectsInconsistentVocabularies) {
  TokenizerVocab empty;
  EXPECT_EQ(Tokenizer::from_vocab(empty).status().code(), ErrorCode::kFormat);
  TokenizerVocab bad_scores;
  bad_scores.tokens = {"a", "b"};
  bad_scores.scores = {1.0f};
  auto r = Tokenizer::from_vocab(bad_scores);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tokenizer: 1 scores for 2 tokens");
  TokenizerVocab bad_types;
  bad_types.tokens = {"a"};
  bad_types.types = {TokenType::kNormal, TokenType::kNormal};
  EXPECT_EQ(Tokenizer::from_vocab(bad_types).status().code(), ErrorCode::kFormat);
}

}  // namespace
}  // namespace tally
