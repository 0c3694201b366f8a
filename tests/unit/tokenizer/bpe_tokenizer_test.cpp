// The byte-level BPE tokenizer on small hand-made vocabularies: merge ranks, byte-level
// spelling, invalid UTF-8, ignore_merges and added tokens.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace tally {
namespace {

using Ids = std::vector<int32_t>;

// Ids 0..255: the byte-level character of that byte; then `extra` tokens from id 256 on.
TokenizerVocab bpe_vocab(std::vector<std::string> merges, std::vector<std::string> extra,
                         std::string pre = "gpt-2") {
  TokenizerVocab v;
  v.kind = TokenizerKind::kBpe;
  v.pre = std::move(pre);
  for (int b = 0; b < 256; ++b) {
    v.tokens.emplace_back(tok::byte_level_char(static_cast<uint8_t>(b)));
  }
  for (auto& t : extra) v.tokens.push_back(std::move(t));
  v.merges = std::move(merges);
  return v;
}

std::unique_ptr<Tokenizer> build(TokenizerVocab v) {
  auto tok = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(BpeTokenizer, AppliesMergesInRankOrder) {
  // ids: ab 256, bc 257
  auto bc_first = build(bpe_vocab({"b c", "a b"}, {"ab", "bc"}));
  EXPECT_EQ(bc_first->encode("abc", false, false), (Ids{'a', 257}));
  auto ab_first = build(bpe_vocab({"a b", "b c"}, {"ab", "bc"}));
  EXPECT_EQ(ab_first->encode("abc", false, false), (Ids{256, 'c'}));
  // The same pair twice: the leftmost merges first.
  auto aa = build(bpe_vocab({"a a"}, {"aa"}));
  EXPECT_EQ(aa->encode("aaa", false, false), (Ids{256, 'a'}));
  EXPECT_EQ(aa->encode("aaaa", false, false), (Ids{256, 256}));
}

TEST(BpeTokenizer, SpellsSpacesAndBytesWithTheByteLevelAlphabet) {
  // "\xC4\xA0" is U+0120 'Ġ', the byte-level space.
  auto tok = build(bpe_vocab({"\xC4\xA0 h", "\xC4\xA0h i"}, {"\xC4\xA0h", "\xC4\xA0hi"}));
  const Ids ids = tok->encode("hi hi", false, false);
  EXPECT_EQ(ids, (Ids{'h', 'i', 257}));
  EXPECT_EQ(tok->token_bytes(257), " hi");
  EXPECT_EQ(tok->decode(ids), "hi hi");
  EXPECT_EQ(tok->piece(' '), "\xC4\xA0");
  EXPECT_EQ(tok->token_bytes('\n'), "\n");
}

TEST(BpeTokenizer, InvalidUtf8BecomesReplacementCharacters) {
  auto tok = build(bpe_vocab({}, {}));
  const Ids ids = tok->encode("a\xFF", false, false);
  EXPECT_EQ(ids, (Ids{'a', 0xEF, 0xBF, 0xBD}));  // U+FFFD's bytes
  EXPECT_EQ(tok->decode(ids), "a\xEF\xBF\xBD");
  EXPECT_EQ(tok->encode("\xE2\x96", false, false).size(), 6u);  // one U+FFFD per bad byte
}

TEST(BpeTokenizer, IgnoreMergesTakesWholeWordsThatAreTokens) {
  // "xyz" is a token no merge can reach.
  TokenizerVocab llama3 = bpe_vocab({"x y"}, {"xy", "xyz"}, "llama-bpe");
  llama3.bos_id = 256;
  auto whole = build(std::move(llama3));
  EXPECT_EQ(whole->encode("xyz", false, false), (Ids{257}));
  EXPECT_TRUE(whole->add_bos());  // llama.cpp's default for this pre-tokenizer
  EXPECT_EQ(whole->encode("xyz", true, false), (Ids{256, 257}));
  auto merged = build(bpe_vocab({"x y"}, {"xy", "xyz"}, "gpt-2"));
  EXPECT_EQ(merged->encode("xyz", false, false), (Ids{256, 'z'}));
  EXPECT_FALSE(merged->add_bos());
}

TEST(BpeTokenizer, AddedTokensAreSplitOffBeforeThePreTokenizer) {
  TokenizerVocab v = bpe_vocab({}, {"<|endoftext|>", "  "});
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  v.types[256] = TokenType::kControl;
  v.types[257] = TokenType::kUserDefined;
  v.eos_id = 256;
  auto tok = build(std::move(v));
  EXPECT_EQ(tok->encode("a  b", false, false), (Ids{'a', 257, 'b'}));
  EXPECT_EQ(tok->encode("<|endoftext|>", false, true), (Ids{256}));
  EXPECT_EQ(tok->encode("<|e", false, true), (Ids{'<', '|', 'e'}));
  const Ids plain = tok->encode("<|endoftext|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok->decode(plain), "<|endoftext|>");
  EXPECT_EQ(tok->decode(Ids{'a', 257, 256}), "a  ");
  EXPECT_EQ(tok->decode(Ids{'a', 257, 256}, false), "a  <|endoftext|>");
  EXPECT_TRUE(tok->is_eog(256));
}

TEST(BpeTokenizer, RejectsUnknownPreTokenizersAndUselessMerges) {
  auto unknown = Tokenizer::from_vocab(bpe_vocab({}, {}, "klingon"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(unknown.status().message().find("'klingon'"), std::string::npos);
  auto useless = Tokenizer::from_vocab(bpe_vocab({"q q"}, {}));  // "qq" is not a token
  ASSERT_FALSE(useless.ok());
  EXPECT_EQ(useless.status().code(), ErrorCode::kFormat);
}

}  // namespace
}  // namespace tally
