#include "sampling/stop_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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

// Reference: cut at the earliest end of any stop (longest on equal ends, first of equals).
Outcome reference_cut(const std::vector<std::string>& stops, const std::string& text) {
  size_t best_end = std::string::npos, best_pos = 0;
  int32_t best = -1;
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) continue;
    const size_t pos = text.find(stops[i]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops[i].size();
    if (end < best_end || (end == best_end && pos < best_pos)) {
      best_end = end, best_pos = pos, best = static_cast<int32_t>(i);
    }
  }
  if (best < 0) return {text, -1};
  return {text.substr(0, best_pos), best};
}

// `text` cut into pieces of 1..max_piece bytes.
std::vector<std::string> split_randomly(const std::string& text, size_t max_piece, Xoshiro256& rng) {
  std::vector<std::string> pieces;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = 1 + rng.next_u64() % max_piece;
    pieces.push_back(text.substr(pos, n));
    pos += n;
  }
  return pieces;
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
    const Outcome split = run(stops, split_randomly(text, 3, rng));
    ASSERT_EQ(split.text, whole.text) << text;
    ASSERT_EQ(split.stop_index, whole.stop_index) << text;
    ASSERT_EQ(whole.text, reference_cut(stops, text).text) << text;
  }
}

TEST(StopMatcher, RandomStopSetsMatchTheReference) {
  // Small alphabets make overlaps, shared prefixes, stops inside stops and duplicates common.
  Xoshiro256 rng(2026);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::string> stops(1 + rng.next_u64() % 6);
    for (std::string& s : stops) {
      s.resize(1 + rng.next_u64() % 5);
      for (char& c : s) c = "ab"[rng.next_u64() % 2];
    }
    std::string text(rng.next_u64() % 24, 'a');
    for (char& c : text) c = "abc"[rng.next_u64() % 3];
    const Outcome got = run(stops, split_randomly(text, 4, rng));
    const Outcome want = reference_cut(stops, text);
    ASSERT_EQ(got.text, want.text) << text;
    ASSERT_EQ(got.stop_index, want.stop_index) << text;
  }
}

TEST(StopMatcher, ManyLongStopsAtTheCapCostLinearWork) {
  // 16 stops of 1 KiB ("aaa...aX"): a text of "a"s is always a partial match of all of them,
  // which made the old per-piece search re-scan every stop against the held-back KiB.
  constexpr size_t kStops = 16;
  constexpr size_t kLen = StopSet::kMaxTotalBytes / kStops;
  std::vector<std::string> stops;
  for (size_t k = 0; k < kStops; ++k) {
    stops.push_back(std::string(kLen - 1, 'a') + static_cast<char>('A' + k));
  }
  ASSERT_TRUE(StopSet::validate(stops).ok());
  StopMatcher m(stops);
  const size_t n_a = 200'000;
  size_t emitted = 0, fed = 0;
  for (size_t pos = 0; pos < n_a; pos += 3) {
    const std::string piece(std::min<size_t>(3, n_a - pos), 'a');
    const StopMatcher::Update u = m.feed(piece);
    fed += piece.size();
    emitted += u.emit.size();
    ASSERT_FALSE(u.stopped);
    ASSERT_LE(m.held_back(), kLen - 1);
  }
  const StopMatcher::Update u = m.feed("P!");
  fed += 2;
  emitted += u.emit.size();
  ASSERT_TRUE(u.stopped);
  EXPECT_EQ(u.stop_index, 'P' - 'A');
  EXPECT_EQ(emitted, n_a - (kLen - 1));
  // Amortized: at most two automaton steps and one moved byte per byte fed.
  EXPECT_LE(m.work(), 3 * fed) << "work " << m.work() << " for " << fed << " bytes";
}

TEST(StopMatcher, ValidateCapsTheTotalStopBytes) {
  const std::vector<std::string> huge(16, std::string(32 * 1024, 'x'));
  Status s = StopSet::validate(huge);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("stop"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("524288"), std::string::npos) << s.message();
  EXPECT_TRUE(StopSet::validate({std::string(StopSet::kMaxTotalBytes, 'x')}).ok());
  EXPECT_FALSE(StopSet::validate({std::string(StopSet::kMaxTotalBytes, 'x'), "y"}).ok());
}

TEST(StopMatcher, SamplesShareOneStopSet) {
  auto set = std::make_shared<const StopSet>(std::vector<std::string>{"END"});
  StopMatcher a(set), b(set);
  EXPECT_EQ(set.use_count(), 3);
  EXPECT_EQ(a.feed("xEN").emit, "x");
  EXPECT_EQ(b.feed("yyE").emit, "yy");  // each keeps its own state
  EXPECT_TRUE(a.feed("D").stopped);
  EXPECT_FALSE(b.feed("X").stopped);
}

TEST(StopMatcher, ValidateNamesTheEmptyEntry) {
  EXPECT_TRUE(StopSet::validate({"a", "bc"}).ok());
  const Status s = StopSet::validate({"a", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("stop[1]"), std::string::npos) << s.message();
  // An empty stop never matches in the matcher itself.
  EXPECT_EQ(run({""}, {"abc"}).text, "abc");
}

}  // namespace
}  // namespace tally
