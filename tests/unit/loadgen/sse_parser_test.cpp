// SSE parsing is incremental: any split of the bytes (down to one byte at a time, inside
// "\r\n") gives the same events; multi-line data is joined; comments and other fields skipped.
#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

namespace tally::loadgen {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& bytes, size_t piece) {
  SseParser p;
  std::vector<std::string> events;
  for (size_t i = 0; i < bytes.size(); i += piece) p.feed(bytes.substr(i, piece), events);
  return events;
}

TEST(SseParser, AnySplitGivesTheSameEvents) {
  const std::string stream =
      ": keep-alive comment\n\n"
      "data: {\"a\":1}\n\n"
      "event: message\r\ndata: {\"b\":2}\r\n\r\n"
      "data:first\ndata: second\n\n"
      "id: 7\nretry: 10\n\n"
      "data: [DONE]\r\r";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "first\nsecond", "[DONE]"};
  for (size_t piece : {1, 2, 3, 5, 7, 1000}) {
    EXPECT_EQ(parse_in_pieces(stream, piece), want) << "piece " << piece;
  }
}

TEST(SseParser, AnEventWaitsForItsBlankLine) {
  SseParser p;
  std::vector<std::string> events;
  p.feed("data: {\"x\":", events);
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(p.has_partial_event());
  p.feed("1}\n", events);
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(p.has_partial_event());
  p.feed("\n", events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "{\"x\":1}");
  EXPECT_FALSE(p.has_partial_event());
}

TEST(SseParser, EmptyDataIsAnEventButABlankLineAloneIsNot) {
  SseParser p;
  std::vector<std::string> events;
  p.feed("\n\ndata:\n\n", events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "");
}

}  // namespace
}  // namespace tally::loadgen
