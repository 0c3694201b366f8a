#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <set>

#include "tokenizer/byte_level.h"

namespace tally::tok {
namespace {

TEST(Utf8, ClassifiesWellFormedIllFormedAndCutSequences) {
  const auto step = [](std::string_view s) { return utf8_step(s, 0); };
  EXPECT_EQ(step("a").kind, Utf8Step::kValid);
  EXPECT_EQ(step("\xE2\x96\x81").codepoint, 0x2581u);
  EXPECT_EQ(step("\xF0\x9F\xA6\x99").length, 4);
  EXPECT_EQ(step("\xE2\x96").kind, Utf8Step::kIncomplete);
  EXPECT_EQ(step("\xE2\x96").length, 2);
  EXPECT_EQ(step("\xE2" "a").kind, Utf8Step::kInvalid);
  EXPECT_EQ(step("\xE2" "a").length, 1);
  EXPECT_EQ(step("\xE2\x96" "a").length, 2);   // maximal subpart
  EXPECT_EQ(step("\xC0\x80").kind, Utf8Step::kInvalid);  // overlong
  EXPECT_EQ(step("\xED\xA0\x80").kind, Utf8Step::kInvalid);  // surrogate
  EXPECT_EQ(step("\xF4\x90\x80\x80").kind, Utf8Step::kInvalid);  // above U+10FFFF
  EXPECT_EQ(step("\x80").kind, Utf8Step::kInvalid);
  EXPECT_EQ(step("\xFF").kind, Utf8Step::kInvalid);
}

TEST(Utf8, SanitizeReplacesOnlyIllFormedParts) {
  EXPECT_EQ(utf8_sanitize("h\xC3\xA9llo", false), "h\xC3\xA9llo");
  EXPECT_EQ(utf8_sanitize("a\xE2\x96" "b", false), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("a\xE2\x96" "b", true), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("\xFF\xFE", false), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(utf8_is_valid(utf8_sanitize("\xF0\x9F\xA6", false)));
  EXPECT_FALSE(utf8_is_valid("\xF0\x9F\xA6"));
  EXPECT_EQ(utf8_char_length("\xF0\x9F\xA6\x99", 0), 4u);
  EXPECT_EQ(utf8_char_length("\xF0\x9F\xA6", 0), 1u);
}

TEST(ByteLevel, IsABijectionOnBytes) {
  std::set<std::string> chars;
  for (int b = 0; b < 256; ++b) {
    const std::string_view c = byte_level_char(static_cast<uint8_t>(b));
    chars.emplace(c);
    const Utf8Step step = utf8_step(c, 0);
    ASSERT_EQ(step.kind, Utf8Step::kValid);
    ASSERT_EQ(step.length, c.size());
    EXPECT_EQ(byte_level_byte(step.codepoint), b);
  }
  EXPECT_EQ(chars.size(), 256u);
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // U+0120
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // U+010A
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_byte(0x2581), -1);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string spelled;
  byte_level_encode(all, spelled);
  std::string back;
  EXPECT_TRUE(byte_level_decode(spelled, back));
  EXPECT_EQ(back, all);
  back.clear();
  EXPECT_FALSE(byte_level_decode("a\xE2\x96\x81", back));  // U+2581 is not in the alphabet
  EXPECT_EQ(back, "a\xE2\x96\x81");
}

}  // namespace
}  // namespace tally::tok
