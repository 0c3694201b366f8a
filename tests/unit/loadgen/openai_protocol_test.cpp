// The request body asks for a stream with usage; chunk parsing reads completions text, chat
// deltas, usage, error events, [DONE], and names what is malformed.
#include "loadgen/openai_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tally::loadgen {
namespace {

using nlohmann::json;

TEST(OpenAiProtocol, CompletionsBodyStreamsWithUsage) {
  RequestBodyParams p;
  p.model = "m";
  p.prompt = "hello";
  p.max_tokens = 8;
  p.ignore_eos = true;
  const json j = json::parse(request_body(p));
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["prompt"], "hello");
  EXPECT_EQ(j["max_tokens"], 8);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_FALSE(j.contains("messages"));
}

TEST(OpenAiProtocol, ChatBodyHasMessagesAndNoIgnoreEosUnlessAsked) {
  RequestBodyParams p;
  p.kind = ApiKind::kChat;
  p.messages = {{"system", "s"}, {"user", "u"}};
  p.max_tokens = 4;
  const json j = json::parse(request_body(p));
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][1]["role"], "user");
  EXPECT_EQ(j["max_completion_tokens"], 4);
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_FALSE(j.contains("ignore_eos"));
}

TEST(OpenAiProtocol, ParsesTextDeltaUsageErrorAndDone) {
  std::string err;
  EXPECT_EQ(parse_stream_chunk(R"({"choices":[{"index":0,"text":"ab"}],"usage":null})", err).text,
            "ab");
  EXPECT_TRUE(err.empty());
  EXPECT_EQ(parse_stream_chunk(R"({"choices":[{"delta":{"content":"cd"}}]})", err).text, "cd");
  EXPECT_EQ(parse_stream_chunk(R"({"choices":[{"delta":{"role":"assistant"}}]})", err).text, "");
  const auto usage = parse_stream_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":8,"total_tokens":25}})",
      err);
  EXPECT_EQ(usage.prompt_tokens, 17);
  EXPECT_EQ(usage.completion_tokens, 8);
  EXPECT_EQ(parse_stream_chunk(R"({"error":{"message":"boom"}})", err).error, "boom");
  EXPECT_TRUE(parse_stream_chunk("[DONE]", err).done);
  EXPECT_TRUE(err.empty());
}

TEST(OpenAiProtocol, MalformedChunksAreNamed) {
  std::string err;
  parse_stream_chunk("{not json", err);
  EXPECT_NE(err.find("not a JSON object"), std::string::npos) << err;
  parse_stream_chunk(R"({"id":"x"})", err);
  EXPECT_NE(err.find("no 'choices'"), std::string::npos) << err;
}

TEST(OpenAiProtocol, ErrorMessageOfABody) {
  EXPECT_EQ(error_message_of_body(R"({"error":{"message":"bad key","type":"x"}})"), "bad key");
  EXPECT_EQ(error_message_of_body("plain text"), "plain text");
}

}  // namespace
}  // namespace tally::loadgen
