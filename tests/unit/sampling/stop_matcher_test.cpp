#include "sampling/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampling/rng.h"

namespace tally {
namespace {

struct Outcome {
  std::string text;  // everything emitted, flush included when not stopped
  int32_t stop_index = -1;
};

Outcome run(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
  StopMatcher m(stops);
  Outcome out;
  for (const std::string& piece : pieces) {
    const StopMatcher::Update u = m.feed(piece);
    out.text += u.emit;
    if (u.stopped) {
      out.stop_index = u.stop_index;
      return out;
    }
  }
  out.text += m.flush();
  return out;
}

TEST(StopMatcher, StopSplitAcrossPieces) {
  StopMatcher m({"###"});
  StopMatcher::Update u = m.feed("Hello #");
  EXPECT_EQ(u.emit, "Hello ");
  EXPECT_FALSE(u.stopped);
  EXPECT_EQ(m.held_back(), 1u);
  u = m.feed("#");
  EXPECT_EQ(u.emit, "");
  EXPECT_EQ(m.held_back(), 2u);
  u = m.feed("# world");
  EXPECT_EQ(u.emit, "");
  EXPECT_TRUE(u.stopped);
  EXPECT_EQ(u.stop_index, 0);
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.feed("more").emit, "");  // ignored after the stop
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, OverlappingPrefix) {
  // "ab" in "aab": the first "a" is released once the second shows it cannot start "ab".
  StopMatcher m({"ab"});
  EXPECT_EQ(m.feed("a").emit, "");
  EXPECT_EQ(m.feed("a").emit, "a");
  const StopMatcher::Update u = m.feed("b");
  EXPECT_TRUE(u.stopped);
  EXPECT_EQ(u.emit, "");
  EXPECT_EQ(run({"ab"}, {"aab"}).text, "a");
  EXPECT_EQ(run({"ab"}, {"aab"}).stop_index, 0);
}

TEST(StopMatcher, SelfOverlappingStopKeepsTheLongestPartialMatch) {
  StopMatcher m({"abac"});
  EXPECT_EQ(m.feed("xaba").emit, "x");
  EXPECT_EQ(m.feed("b").emit, "ab");  // "abab": only the trailing "ab" can still match
  const StopMatcher::Update u = m.feed("ac!");
  EXPECT_TRUE(u.stopped);
  EXPECT_EQ(u.emit, "");
}

TEST(StopMatcher, ReleasesHeldTextWhenItStopsMatching) {
  StopMatcher m({"<|im_end|>"});
  EXPECT_EQ(m.feed("hi <|im").emit, "hi ");
  EXPECT_EQ(m.held_back(), 4u);
  EXPECT_EQ(m.feed("ag").emit, "<|imag");
  EXPECT_EQ(m.held_back(), 0u);
  EXPECT_EQ(m.feed("e <").emit, "e ");
  EXPECT_EQ(m.flush(), "<");  // the end of generation makes held text final
}

TEST(StopMatcher, MultipleStopsFirstToCompleteWins) {
  Outcome o = run({"STOP", "END"}, {"the EN", "D of STOP"});
  EXPECT_EQ(o.text, "the ");
  EXPECT_EQ(o.stop_index, 1);
  // "b" completes before "xabc" would, whatever the split.
  o = run({"xabc", "b"}, {"xabc"});
  EXPECT_EQ(o.text, "xa");
  EXPECT_EQ(o.stop_index, 1);
  // Completing at the same byte: the longer one is cut.
  o = run({"c", "bc"}, {"abcd"});
  EXPECT_EQ(o.text, "a");
  EXPECT_EQ(o.stop_index, 1);
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("abc").emit, "abc");
  EXPECT_EQ(m.held_back(), 0u);
  const Outcome o = run({"zz"}, {"a", "z", "b"});
  EXPECT_EQ(o.text, "azb");
  EXPECT_EQ(o.stop_index, -1);
}

TEST(StopMatcher, ResultDoesNotDependOnHowTextIsSplit) {
  const std::vector<std::string> stops = {"aab", "ba", "abab"};
  Xoshiro256 rng(77);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int len = 1 + static_cast<int>(rng.next_u64() % 12);
    for (int i = 0; i < len; ++i) text += "abc"[rng.next_u64() % 3];
    const Outcome whole = run(stops, {text});
    std::vector<std::string> pieces;
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = 1 + rng.next_u64() % 3;
      pieces.push_back(text.substr(pos, n));
      pos += n;
    }
    const Outcome split = run(stops, pieces);
    ASSERT_EQ(split.text, whole.text) << text;
    ASSERT_EQ(split.stop_index, whole.stop_index) << text;
    // Reference: cut at the earliest end of any stop (longest on equal ends).
    size_t best_end = std::string::npos, best_pos = 0;
    for (const std::string& s : stops) {
      const size_t pos = text.find(s);
      if (pos == std::string::npos) continue;
      const size_t end = pos + s.size();
      if (end < best_end || (end == best_end && pos < best_pos)) best_end = end, best_pos = pos;
    }
    ASSERT_EQ(whole.text, best_end == std::string::npos ? text : text.substr(0, best_pos))
        << text;
  }
}

TEST(StopMatcher, ValidateNamesTheEmptyEntry) {
  EXPECT_TRUE(StopMatcher::validate({"a", "bc"}).ok());
  const Status s = StopMatcher::validate({"a", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("stop[1]"), std::string::npos) << s.message();
  // An empty stop never matches in the matcher itself.
  EXPECT_EQ(run({""}, {"abc"}).text, "abc");
}

}  // namespace
}  // namespace tally
