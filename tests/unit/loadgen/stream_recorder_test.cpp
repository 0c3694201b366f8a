// A response becomes a record: TTFT from the first chunk with text, ITL between text chunks,
// usage over counted chunks, and each way to fail named (HTTP status, error event, a cut
// stream, malformed SSE, no text); --ignore-eos short outputs flagged, not failed.
#include "loadgen/stream_recorder.h"

#include <gtest/gtest.h>

namespace tally::loadgen {
namespace {

using std::chrono::milliseconds;

struct Feed {
  RequestRecord rec;
  StreamRecorder r;
  Clock::time_point t0 = Clock::now();
  explicit Feed(int asked, bool ignore_eos = true) : r(rec, ignore_eos) {
    rec.requested_output_len = asked;
    r.sent() = t0;
  }
  void body(const std::string& bytes, int ms) { r.on_body(bytes, t0 + milliseconds(ms)); }
};

std::string text_chunk(const std::string& t) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + t + "\"}],\"usage\":null}\n\n";
}

TEST(StreamRecorder, TimesTextChunksAndTakesUsage) {
  Feed f(3);
  f.r.on_status(200);
  f.body(text_chunk(""), 5);  // no text: not the first token
  f.body(text_chunk("a") + text_chunk("b"), 10);
  f.body(text_chunk("c").substr(0, 20), 30);  // split mid-event: arrives whole at 40
  f.body(text_chunk("c").substr(20), 40);
  f.body(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\ndata: "
      "[DONE]\n\n",
      41);
  f.r.on_end("");
  const RequestRecord& r = f.rec;
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_NEAR(r.ttft_s, 0.010, 1e-9);
  EXPECT_NEAR(r.e2e_s, 0.041, 1e-9);
  ASSERT_EQ(r.itl_s().size(), 2u);
  EXPECT_NEAR(r.itl_s()[0], 0.0, 1e-9);
  EXPECT_NEAR(r.itl_s()[1], 0.030, 1e-9);
  EXPECT_EQ(r.generated_text, "abc");
  EXPECT_EQ(r.input_tokens, 9);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_NEAR(r.tpot_s(), 0.0155, 1e-9);
  EXPECT_FALSE(r.short_output);
}

TEST(StreamRecorder, WithoutUsageCountsChunksAndFlagsShortOutputs) {
  Feed f(5);
  f.r.on_status(200);
  f.body(text_chunk("x") + text_chunk("y") + "data: [DONE]\n\n", 3);
  f.r.on_end("");
  EXPECT_TRUE(f.rec.success);
  EXPECT_FALSE(f.rec.usage_reported);
  EXPECT_EQ(f.rec.output_tokens, 2);
  EXPECT_TRUE(f.rec.short_output);
}

TEST(StreamRecorder, FailuresSayWhy) {
  {
    Feed f(4);
    f.r.on_status(401);
    f.body(R"({"error":{"message":"invalid API key"}})", 1);
    f.r.on_end("");
    EXPECT_FALSE(f.rec.success);
    EXPECT_EQ(f.rec.error, "HTTP 401: invalid API key");
  }
  {
    Feed f(4);
    f.r.on_status(200);
    f.body(text_chunk("a") + "data: {\"error\":{\"message\":\"engine failed\"}}\n\n", 1);
    f.r.on_end("");
    EXPECT_EQ(f.rec.error, "error event: engine failed");
  }
  {
    Feed f(4);
    f.r.on_status(200);
    f.body(text_chunk("a") + "data: {\"cho", 1);
    f.r.on_end("the server closed the connection mid-response");
    EXPECT_EQ(f.rec.error, "the server closed the connection mid-response");
  }
  {
    Feed f(4);
    f.r.on_status(200);
    f.body("data: nonsense\n\n", 1);
    f.r.on_end("");
    EXPECT_NE(f.rec.error.find("malformed SSE"), std::string::npos) << f.rec.error;
  }
  {
    Feed f(4);
    f.r.on_status(200);
    f.body("data: [DONE]\n\n", 1);
    f.r.on_end("");
    EXPECT_NE(f.rec.error.find("no chunk carried text"), std::string::npos) << f.rec.error;
  }
  {
    Feed f(4);
    f.r.on_end("connect: Connection refused");
    EXPECT_EQ(f.rec.error, "connect: Connection refused");
    EXPECT_FALSE(f.rec.success);
  }
}

}  // namespace
}  // namespace tally::loadgen
