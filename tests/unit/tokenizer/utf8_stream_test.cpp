// UTF-8 held back at piece boundaries (the detokenizer and the server both rely on it).
#include "tokenizer/utf8_stream.h"

#include <gtest/gtest.h>

namespace {

using tally::tok::utf8_valid;
using tally::tok::Utf8Stream;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Stream, HoldsBackSplitCharacters) {
  Utf8Stream s;
  const std::string euro = "\xE2\x82\xAC";  // €
  EXPECT_EQ(s.push("a\xE2"), "a");
  EXPECT_TRUE(s.holding());
  EXPECT_EQ(s.push("\x82"), "");
  EXPECT_EQ(s.push("\xAC"
                   "b"),
            euro + "b");
  EXPECT_FALSE(s.holding());
  EXPECT_EQ(s.finish(), "");
}

TEST(Utf8Stream, ReplacesInvalidBytes) {
  Utf8Stream s;
  EXPECT_EQ(s.push("x\xFFy"), "x" + kFffd + "y");
  EXPECT_EQ(s.push("\xC0\xAF"), kFffd + kFffd);              // overlong form: two subparts
  EXPECT_EQ(s.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate
  EXPECT_EQ(s.push("\xE2\x82"
                   "z"),
            kFffd + "z");  // cut short by a non-continuation
}

TEST(Utf8Stream, FinishReplacesAnUnfinishedCharacter) {
  Utf8Stream s;
  EXPECT_EQ(s.push("ok\xF0\x9F"), "ok");
  EXPECT_EQ(s.finish(), kFffd);
  EXPECT_EQ(s.push("\x98\x80"), kFffd + kFffd);  // continuation bytes alone after the reset
}

TEST(Utf8Valid, WholeStrings) {
  EXPECT_EQ(utf8_valid("plain"), "plain");
  EXPECT_EQ(utf8_valid("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(utf8_valid("end\xF0\x9F"), "end" + kFffd);
}

}  // namespace
