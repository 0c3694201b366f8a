// Request parsing: every accepted shape, OpenAI's defaults, and errors that name the field.
#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

using namespace tally::server;

CompletionRequest completion(const std::string& body, IgnoredFields* ignored_out = nullptr) {
  CompletionRequest req;
  IgnoredFields ignored;
  auto error = parse_completion_request(body, req, ignored);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  if (ignored_out) *ignored_out = ignored;
  return req;
}

ApiError completion_error(const std::string& body) {
  CompletionRequest req;
  IgnoredFields ignored;
  auto error = parse_completion_request(body, req, ignored);
  EXPECT_TRUE(error) << body;
  return error.value_or(ApiError{});
}

ApiError chat_error(const std::string& body) {
  ChatRequest req;
  IgnoredFields ignored;
  auto error = parse_chat_request(body, req, ignored);
  EXPECT_TRUE(error) << body;
  return error.value_or(ApiError{});
}

void expect_error(const ApiError& e, const std::string& param, const std::string& needle) {
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, param) << e.message;
  EXPECT_NE(e.message.find(needle), std::string::npos) << e.message;
}

TEST(CompletionRequest, OpenAiDefaults) {
  auto req = completion(R"({"model": "m", "prompt": "hi"})");
  EXPECT_EQ(req.params.model, "m");
  ASSERT_EQ(req.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(req.prompts[0]), "hi");
  EXPECT_FALSE(req.params.max_tokens);
  EXPECT_FLOAT_EQ(req.params.request.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(req.params.request.sampling.top_p, 1.0f);
  EXPECT_EQ(req.params.request.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(req.params.request.sampling.min_p, 0.0f);
  EXPECT_EQ(req.params.request.sampling.seed, tally::kRandomSeed);
  EXPECT_EQ(req.params.request.n, 1);
  EXPECT_FALSE(req.params.stream);
  EXPECT_EQ(req.params.logprobs, -1);
}

// The server's defaults (the model's generation config over OpenAI's) fill what a request does
// not send; what it sends wins, in both endpoints.
TEST(CompletionRequest, ModelDefaultsFillOnlyAbsentFields) {
  tally::SamplingParams defaults = openai_sampling_defaults();
  defaults.temperature = 0.6f;
  defaults.top_k = 20;
  defaults.top_p = 0.9f;
  CompletionRequest req;
  IgnoredFields ignored;
  ASSERT_FALSE(parse_completion_request(R"({"prompt": "hi", "top_k": 5})", req, ignored, defaults));
  EXPECT_FLOAT_EQ(req.params.request.sampling.temperature, 0.6f);
  EXPECT_EQ(req.params.request.sampling.top_k, 5);
  EXPECT_FLOAT_EQ(req.params.request.sampling.top_p, 0.9f);
  EXPECT_FLOAT_EQ(req.params.request.sampling.min_p, 0.0f);  // OpenAI's: the model names none
  ChatRequest chat;
  ASSERT_FALSE(parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 0})",
                                  chat, ignored, defaults));
  EXPECT_FLOAT_EQ(chat.params.request.sampling.temperature, 0.0f);
  EXPECT_EQ(chat.params.request.sampling.top_k, 20);
}

TEST(CompletionRequest, EveryParameter) {
  auto req = completion(R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0,
    "top_p": 0.5, "top_k": 3, "min_p": 0.1, "n": 2, "stop": ["x", "yz"], "seed": 42,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"13": -100, "7": 2.5},
    "logprobs": 3, "stream": true, "stream_options": {"include_usage": true}, "user": "u1",
    "ignore_eos": true, "min_tokens": 2, "echo": true, "repetition_penalty": 1.1})");
  const auto& p = req.params;
  EXPECT_EQ(*p.max_tokens, 7);
  EXPECT_FLOAT_EQ(p.request.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(p.request.sampling.top_p, 0.5f);
  EXPECT_EQ(p.request.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(p.request.sampling.min_p, 0.1f);
  EXPECT_EQ(p.request.n, 2);
  EXPECT_EQ(p.request.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(p.request.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(p.request.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p.request.sampling.frequency_penalty, -0.5f);
  ASSERT_EQ(p.request.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(p.request.sampling.logit_bias[0].first, 13);
  EXPECT_FLOAT_EQ(p.request.sampling.logit_bias[0].second, -100.0f);
  EXPECT_EQ(p.logprobs, 3);
  EXPECT_TRUE(p.request.sampling.logprobs);
  EXPECT_EQ(p.request.sampling.top_logprobs, 3);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.include_usage);
  EXPECT_EQ(p.user, "u1");
  EXPECT_TRUE(p.request.ignore_eos);
  EXPECT_EQ(p.request.min_tokens, 2);
  EXPECT_TRUE(req.echo);
  EXPECT_FLOAT_EQ(p.request.sampling.repetition_penalty, 1.1f);
}

TEST(CompletionRequest, PromptShapes) {
  auto ids = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(ids.prompts[0]), (std::vector<int64_t>{1, 2, 3}));
  auto texts = completion(R"({"prompt": ["a", "b"]})");
  ASSERT_EQ(texts.prompts.size(), 2u);
  EXPECT_EQ(std::get<std::string>(texts.prompts[1]), "b");
  auto lists = completion(R"({"prompt": [[1], [2, 3]]})");
  ASSERT_EQ(lists.prompts.size(), 2u);
  EXPECT_EQ(std::get<std::vector<int64_t>>(lists.prompts[1]).size(), 2u);
  auto single_stop = completion(R"({"prompt": "x", "stop": "end", "max_tokens": 16.0})");
  EXPECT_EQ(single_stop.params.request.stop, (std::vector<std::string>{"end"}));
  EXPECT_EQ(*single_stop.params.max_tokens, 16);
}

TEST(CompletionRequest, NullMeansAbsentAndUnknownFieldsAreCollected) {
  IgnoredFields ignored;
  auto req = completion(R"({"prompt": "x", "max_tokens": null, "stop": null, "seed": null,
                           "frobnicate": 1, "tools": []})",
                        &ignored);
  EXPECT_FALSE(req.params.max_tokens);
  EXPECT_EQ(ignored, (IgnoredFields{"frobnicate", "tools"}));
}

TEST(CompletionRequest, BadJson) {
  auto e = completion_error("{\"prompt\": ");
  EXPECT_EQ(e.status, 400);
  EXPECT_NE(e.message.find("not valid JSON"), std::string::npos) << e.message;
  EXPECT_NE(completion_error("[1, 2]").message.find("must be a JSON object"), std::string::npos);
  EXPECT_NE(completion_error("").message.find("not valid JSON"), std::string::npos);
  // Invalid UTF-8 inside a JSON string is invalid JSON.
  EXPECT_NE(completion_error("{\"prompt\": \"\xFF\xFE\"}").message.find("not valid JSON"),
            std::string::npos);
  std::string deep(200, '[');
  EXPECT_NE(completion_error("{\"prompt\": " + deep).message.find("deeper"), std::string::npos);
}

TEST(CompletionRequest, WrongTypesNameTheField) {
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": "ten"})"), "max_tokens",
               "must be an integer");
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": 1.5})"), "max_tokens",
               "must be an integer");
  expect_error(completion_error(R"({"prompt": "x", "temperature": "hot"})"), "temperature",
               "must be a number, got a string");
  expect_error(completion_error(R"({"prompt": "x", "stream": "yes"})"), "stream",
               "must be a boolean");
  expect_error(completion_error(R"({"prompt": 5})"), "prompt", "a string or an array");
  expect_error(completion_error(R"({"prompt": ["a", 1]})"), "prompt[1]", "must be a string");
  expect_error(completion_error(R"({"prompt": [1, "a"]})"), "prompt[1]", "must be an integer");
  expect_error(completion_error(R"({"prompt": "x", "stop": [1]})"), "stop[0]", "must be a string");
  expect_error(completion_error(R"({"prompt": "x", "model": 3})"), "model", "must be a string");
  expect_error(completion_error(R"({"prompt": "x", "logit_bias": [1]})"), "logit_bias", "object");
}

TEST(CompletionRequest, OutOfRangeValuesNameTheField) {
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": -5})"), "max_tokens",
               "in [1, 2147483647], got -5");
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": 0})"), "max_tokens", "got 0");
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": 99999999999999999999})"),
               "max_tokens", "in [1, 2147483647]");
  expect_error(completion_error(R"({"prompt": "x", "max_tokens": 10000000000})"), "max_tokens",
               "got 10000000000");
  expect_error(completion_error(R"({"prompt": "x", "temperature": -1})"), "temperature", "got -1");
  expect_error(completion_error(R"({"prompt": "x", "top_p": 1.5})"), "top_p", "[0, 1]");
  expect_error(completion_error(R"({"prompt": "x", "n": 0})"), "n", "got 0");
  expect_error(completion_error(R"({"prompt": "x", "presence_penalty": 3})"), "presence_penalty",
               "[-2, 2]");
  expect_error(completion_error(R"({"prompt": "x", "logprobs": 50})"), "logprobs", "got 50");
  expect_error(completion_error(R"({"prompt": "x", "logit_bias": {"a": 1}})"), "logit_bias",
               "not a token id");
  expect_error(completion_error(R"({"prompt": "x", "logit_bias": {"5": 200}})"), "logit_bias",
               "[-100, 100]");
  expect_error(completion_error(R"({"prompt": "x", "stop": ""})"), "stop", "empty");
  {
    // 16 stops of 32 KiB: over the per-request cap on stop bytes (a 400 naming `stop`).
    nlohmann::json body = {{"prompt", "x"}};
    body["stop"] = std::vector<std::string>(16, std::string(32 * 1024, 's'));
    expect_error(completion_error(body.dump()), "stop", "at most 16384");
  }
  expect_error(completion_error(R"({"prompt": [-1]})"), "prompt[0]", "got -1");
  expect_error(completion_error(R"({"prompt": []})"), "prompt", "empty");
}

TEST(CompletionRequest, SeedBeyondInt64IsRefusedNotConverted) {
  // 2^63 as a float equals (double)INT64_MAX yet does not fit: converting it was UB.
  expect_error(completion_error(R"({"prompt": "x", "seed": 9223372036854775808.0})"), "seed",
               "must be an integer in");
  expect_error(completion_error(R"({"prompt": "x", "seed": 1e19})"), "seed", "must be an integer in");
  expect_error(completion_error(R"({"prompt": "x", "seed": -1e19})"), "seed", "must be an integer in");
  expect_error(completion_error(R"({"prompt": "x", "seed": 1e300})"), "seed", "must be an integer in");
  expect_error(completion_error(R"({"prompt": "x", "seed": 2.5})"), "seed", "must be an integer");
  EXPECT_EQ(completion(R"({"prompt": "x", "seed": 4611686018427387904.0})").params.request.sampling.seed,
            uint64_t{1} << 62);
  EXPECT_EQ(completion(R"({"prompt": "x", "seed": -2.0})").params.request.sampling.seed,
            static_cast<uint64_t>(int64_t{-2}));
}

TEST(CompletionRequest, LogitBiasKeysAreCanonicalTokenIds) {
  for (const char* key : {"05", "+5", " 5", "5 ", "5.0", "-0", "", "1e3", "0x5", "99999999999"}) {
    const std::string body = std::string(R"({"prompt": "x", "logit_bias": {")") + key + R"(": 1}})";
    expect_error(completion_error(body), "logit_bias", "not a token id");
  }
  const auto req = completion(R"({"prompt": "x", "logit_bias": {"0": 1, "5": -2, "2147483647": 3}})");
  ASSERT_EQ(req.params.request.sampling.logit_bias.size(), 3u);
  // A key with a newline is shown escaped, never raw.
  const ApiError e = completion_error(R"({"prompt": "x", "logit_bias": {"5\nX": 1}})");
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
}

TEST(CompletionRequest, LogitBiasHasAtMost300Entries) {
  nlohmann::json body = {{"prompt", "x"}};
  for (int i = 0; i < 300; ++i) body["logit_bias"][std::to_string(i)] = 1;
  EXPECT_EQ(completion(body.dump()).params.request.sampling.logit_bias.size(), 300u);
  body["logit_bias"]["300"] = 1;
  expect_error(completion_error(body.dump()), "logit_bias", "at most 300");
}

TEST(CompletionRequest, MissingAndUnsupported) {
  expect_error(completion_error(R"({"model": "m"})"), "prompt", "required");
  expect_error(completion_error(R"({"prompt": "x", "stream_options": {"include_usage": true}})"),
               "stream_options", "only allowed when 'stream' is true");
  expect_error(completion_error(R"({"prompt": "x", "suffix": "tail"})"), "suffix", "not supported");
  expect_error(completion_error(R"({"prompt": "x", "best_of": 3})"), "best_of", "not supported");
}

TEST(ChatRequest, MessagesAndChatLogprobs) {
  ChatRequest req;
  IgnoredFields ignored;
  auto error = parse_chat_request(
      R"({"model": "m", "messages": [{"role": "system", "content": "be brief"},
          {"role": "user", "content": [{"type": "text", "text": "hi "},
                                       {"type": "text", "text": "there"}]},
          {"role": "assistant", "content": null, "tool_calls": []}],
          "max_tokens": 5, "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2,
          "response_format": {"type": "text"}})",
      req, ignored);
  ASSERT_FALSE(error) << error->message;
  ASSERT_EQ(req.messages.size(), 3u);
  EXPECT_EQ(req.messages[0].role, "system");
  EXPECT_EQ(req.messages[1].content, "hi \nthere");  // text parts joined by newlines
  EXPECT_EQ(req.messages[2].content, "");
  EXPECT_EQ(*req.params.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(req.params.logprobs, 2);
  EXPECT_TRUE(req.params.request.sampling.logprobs);
  EXPECT_EQ(ignored, (IgnoredFields{"response_format"}));
}

TEST(ChatRequest, Errors) {
  expect_error(chat_error(R"({"model": "m"})"), "messages", "required");
  expect_error(chat_error(R"({"messages": []})"), "messages", "must not be empty");
  expect_error(chat_error(R"({"messages": "hi"})"), "messages", "must be an array");
  expect_error(chat_error(R"({"messages": [{"content": "x"}]})"), "messages",
               "'messages[0]': 'role' must be a string");
  expect_error(chat_error(R"({"messages": [{"role": "wizard", "content": "x"}]})"), "messages",
               "'wizard'");
  expect_error(chat_error(R"({"messages": [{"role": "user", "content": 7}]})"), "messages",
               "'content' must be a string, an array of parts or null");
  expect_error(
      chat_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
      "messages", "type 'image_url' is not supported");
  expect_error(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})"),
               "logprobs", "must be a boolean");
  expect_error(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"),
               "top_logprobs", "needs 'logprobs'");
}

TEST(TokenizeRequest, PromptOrMessages) {
  TokenizeRequest t;
  IgnoredFields ignored;
  ASSERT_FALSE(
      parse_tokenize_request(R"({"prompt": "hi", "add_special_tokens": false})", t, ignored));
  EXPECT_EQ(*t.prompt, "hi");
  EXPECT_FALSE(t.add_special_tokens);
  TokenizeRequest none;
  auto e = parse_tokenize_request(R"({"model": "m"})", none, ignored);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
  DetokenizeRequest d;
  ASSERT_FALSE(parse_detokenize_request(R"({"tokens": [1, 2]})", d, ignored));
  EXPECT_EQ(d.tokens, (std::vector<int64_t>{1, 2}));
  DetokenizeRequest bad;
  auto e2 = parse_detokenize_request(R"({"tokens": [1, "x"]})", bad, ignored);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->param, "tokens[1]");
}

}  // namespace
