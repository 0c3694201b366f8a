// tokenizer.json / tokenizer_config.json -> TokenizerVocab on small hand-written files: both
// model families, both merge forms, added tokens, normalizers, special ids, and the errors.
// (The real Llama 3 / Qwen 3 / Gemma 3 files are checked in tests/golden/hf_tokenizers.)
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

namespace tally {
namespace {

using nlohmann::json;

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A byte-level model: the 256 byte-level characters, "ab", "abc", Ġ-prefixed "Ġa".
json byte_level_tokenizer(json merges, json normalizer = nullptr) {
  json vocab = json::object();
  // GPT-2's byte-level alphabet for the printable ASCII bytes is the byte itself.
  for (int c = '!'; c <= '~'; ++c) vocab[std::string(1, static_cast<char>(c))] = c - '!';
  vocab["\xC4\xA0"] = 94;  // Ġ = space
  vocab["ab"] = 95;
  vocab["abc"] = 96;
  vocab["\xC4\xA0" "a"] = 97;
  vocab["\xC3\x83"] = 100;  // the byte-level characters of 0xC3 and 0xA9 (UTF-8 of U+00E9)
  vocab["\xC2\xA9"] = 101;
  json pre = {{"type", "Sequence"},
              {"pretokenizers",
               json::array({{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Regex}}},
                             {"behavior", "Isolated"}},
                            {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre},
          {"added_tokens", json::array({{{"id", 98}, {"content", "<|eot|>"}, {"special", true}},
                                        {{"id", 99}, {"content", "<tool>"}, {"special", false}}})}};
}

std::unique_ptr<Tokenizer> build(const json& tokenizer_json, const json& config = json()) {
  auto vocab = tokenizer_vocab_from_hf(tokenizer_json.dump(), config);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  if (!vocab.ok()) return nullptr;
  auto tok = Tokenizer::from_vocab(std::move(vocab).value());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

TEST(HfTokenizerJson, ByteLevelMergesInBothFormsGiveTheSameTokenizer) {
  auto strings = build(byte_level_tokenizer({"a b", "ab c", "\xC4\xA0 a"}));
  auto pairs = build(byte_level_tokenizer(
      json::array({json::array({"a", "b"}), json::array({"ab", "c"}),
                   json::array({"\xC4\xA0", "a"})})));
  ASSERT_NE(strings, nullptr);
  ASSERT_NE(pairs, nullptr);
  EXPECT_EQ(strings->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(strings->pre(), "llama3");
  // "abc" whole; " ab": "a b" (rank 0) beats "Ġ a" (rank 2), and "Ġ ab" is no merge.
  const std::vector<int32_t> want = {96, 94, 95};
  EXPECT_EQ(strings->encode("abc ab", false, false), want);
  EXPECT_EQ(pairs->encode("abc ab", false, false), want);
}

TEST(HfTokenizerJson, AddedTokensAreControlWhenSpecialElseUserDefined) {
  auto tok = build(byte_level_tokenizer({"a b"}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 102);
  EXPECT_EQ(tok->token_type(98), TokenType::kControl);
  EXPECT_EQ(tok->token_type(99), TokenType::kUserDefined);
  EXPECT_EQ(tok->encode("<tool><|eot|>", false, true), (std::vector<int32_t>{99, 98}));
  // Without special parsing the control text is plain text, the user-defined one still splits.
  const auto plain = tok->encode("<tool><|eot|>", false, false);
  EXPECT_EQ(plain.front(), 99);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 98), 0);
}

TEST(HfTokenizerJson, ConfigNamesSpecialTokensAndNullMeansNone) {
  const json config = {{"bos_token", nullptr},
                       {"eos_token", {{"content", "<|eot|>"}, {"__type", "AddedToken"}}},
                       {"add_bos_token", false}};
  auto tok = build(byte_level_tokenizer({"a b"}), config);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos(), -1);
  EXPECT_EQ(tok->eos(), 98);
  EXPECT_TRUE(tok->is_eog(98));
  EXPECT_FALSE(tok->add_bos());
}

TEST(HfTokenizerJson, NfcNormalizerComposesBeforeTheModel) {
  auto tok = build(byte_level_tokenizer({"a b"}, {{"type", "NFC"}}));
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->normalizes_nfc());
  EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (std::vector<int32_t>{100, 101}));
  EXPECT_EQ(tok->encode("e\xCC\x81", false, false), (std::vector<int32_t>{100, 101}));
  auto plain = build(byte_level_tokenizer({"a b"}));
  EXPECT_NE(plain->encode("e\xCC\x81", false, false), plain->encode("\xC3\xA9", false, false));
}

// SentencePiece-style (Gemma): byte fallback, spaces as U+2581 by a Replace normalizer.
json spm_tokenizer(json merges) {
  json vocab = {{"<unk>", 0}, {"<0x41>", 1}, {"a", 2}, {"b", 3}, {"ab", 4}, {"\xE2\x96\x81", 5},
                {"\xE2\x96\x81" "a", 6}, {"bb", 7}};
  return {{"model", {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"},
                     {"vocab", vocab}, {"merges", merges}}},
          {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                          {"content", "\xE2\x96\x81"}}},
          {"pre_tokenizer", nullptr},
          {"added_tokens", json::array()}};
}

TEST(HfTokenizerJson, ByteFallbackModelsBecomeSpmWithMergeRankScores) {
  auto tok = build(spm_tokenizer({"\xE2\x96\x81 a", "a b"}));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), TokenizerKind::kSpm);
  EXPECT_FALSE(tok->add_space_prefix());
  EXPECT_GT(tok->score(6), tok->score(4));  // the earlier merge scores higher
  // "bb" is a token but no merge makes it: never merged, as Hugging Face does.
  EXPECT_TRUE(std::isinf(tok->score(7)));
  EXPECT_EQ(tok->encode("ab a", false, false), (std::vector<int32_t>{4, 6}));
  EXPECT_EQ(tok->encode("bb", false, false), (std::vector<int32_t>{3, 3}));
  EXPECT_EQ(tok->encode("A", false, false), (std::vector<int32_t>{1}));  // byte fallback
  EXPECT_EQ(tok->token_type(1), TokenType::kByte);
  EXPECT_EQ(tok->unk(), 0);
  EXPECT_EQ(tok->decode(tok->encode(" ab a", false, false)), " ab a");
}

Status error_of(const json& tokenizer_json) {
  auto v = tokenizer_vocab_from_hf(tokenizer_json.dump(), json());
  return v.ok() ? Status::ok_status() : v.status();
}

TEST(HfTokenizerJson, WhatTallyCannotMapIsOneClearError) {
  json unigram = byte_level_tokenizer({"a b"});
  unigram["model"]["type"] = "Unigram";
  EXPECT_EQ(error_of(unigram).code(), ErrorCode::kUnsupported);
  EXPECT_NE(error_of(unigram).message().find("Unigram"), std::string::npos);

  json regex = byte_level_tokenizer({"a b"});
  regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_EQ(error_of(regex).code(), ErrorCode::kUnsupported);
  EXPECT_NE(error_of(regex).message().find("\\w+"), std::string::npos);

  EXPECT_EQ(error_of(byte_level_tokenizer({"a b"}, {{"type", "NFKD"}})).code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(error_of(byte_level_tokenizer(json::array({42}))).code(), ErrorCode::kFormat);
  json bad_id = byte_level_tokenizer({"a b"});
  bad_id["model"]["vocab"]["zz"] = -3;
  EXPECT_EQ(error_of(bad_id).code(), ErrorCode::kFormat);
  EXPECT_EQ(error_of(json::object()).code(), ErrorCode::kFormat);
  auto not_json = tokenizer_vocab_from_hf("{\"model\": [", json());
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), ErrorCode::kFormat);
}

TEST(HfTokenizerJson, MissingDirectoryIsNotFound) {
  auto tok = Tokenizer::from_hf_dir("/nonexistent/tally-hf-dir");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tally
