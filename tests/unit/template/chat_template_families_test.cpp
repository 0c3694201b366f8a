// The real chat templates of the model families tally serves (tests/data/chat_templates,
// sources in its README), rendered through ChatTemplate and compared with the prompt each
// family documents. The conversation is llama.cpp's test-chat-template.cpp one, so the
// expected strings can be checked against its expected outputs (which use bos_token "" where
// these use the family's real BOS text); they also equal transformers' apply_chat_template.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "support/test_data.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tally {
namespace {

std::string template_text(const std::string& name) {
  return tally_test::read_file(
      tally_test::repo_path("tests/data/chat_templates/" + name + ".jinja"));
}

ChatTemplate load(const std::string& name) {
  auto t = ChatTemplate::from_source(template_text(name));
  EXPECT_TRUE(t.ok()) << name << ": " << t.status().to_string();
  return std::move(t).value();
}

ChatMessage msg(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

// system, user, assistant, user, assistant (padded: trim/strip show), user.
std::vector<ChatMessage> conversation() {
  return {msg("system", "You are a helpful assistant"),
          msg("user", "Hello"),
          msg("assistant", "Hi there"),
          msg("user", "Who are you"),
          msg("assistant", "   I am an assistant   "),
          msg("user", "Another question")};
}

ChatTemplateContext tokens(std::string bos, std::string eos) {
  ChatTemplateContext ctx;
  ctx.bos_token = std::move(bos);
  ctx.eos_token = std::move(eos);
  return ctx;
}

struct FamilyCase {
  const char* file;
  const char* bos;
  const char* eos;
  bool system_role;  // does the template accept a system message?
  const char* expected;
};

const FamilyCase kFamilies[] = {
    {"llama2_chat", "<s>", "</s>", true,
     "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s>"
     "<s>[INST] Who are you [/INST] I am an assistant </s><s>[INST] Another question [/INST]"},
    {"llama3_instruct", "<|begin_of_text|>", "<|eot_id|>", true,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
     "assistant<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"llama3_1_instruct", "<|begin_of_text|>", "<|eot_id|>", true,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
     "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful "
     "assistant<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"qwen2_5_instruct", "", "<|im_end|>", true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
     "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
     "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother "
     "question<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {"chatml", "", "<|im_end|>", true,
     "<|im_start|>system\nYou are a helpful "
     "assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
     "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
     "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n<|im_start|>user\nAnother "
     "question<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {"mistral_v0_1_instruct", "<s>", "</s>", true,
     "<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you "
     "[/INST]"
     "    I am an assistant   </s> [INST] Another question [/INST]"},
    // No system role: the system text is merged into the first user message (llama.cpp).
    {"mistral_instruct_legacy", "<s>", "</s>", false,
     "<s>[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]"
     "   I am an assistant   </s>[INST] Another question [/INST]"},
    // v3 templates put the system message into the last user message.
    {"mistral_v0_3_instruct", "<s>", "</s>", true,
     "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>"
     "[INST] You are a helpful assistant\n\nAnother question[/INST]"},
    {"mistral_nemo_instruct_2407", "<s>", "</s>", true,
     "<s>[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>"
     "[INST]You are a helpful assistant\n\nAnother question[/INST]"},
    {"gemma_it", "<bos>", "<eos>", false,
     "<bos><start_of_turn>user\nYou are a helpful assistant\nHello<end_of_turn>\n"
     "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"
     "<start_of_turn>model\nI am an assistant<end_of_turn>\n<start_of_turn>user\nAnother "
     "question<end_of_turn>\n"
     "<start_of_turn>model\n"},
    // Drops system messages silently: merged too.
    {"phi3_mini_instruct", "<s>", "<|endoftext|>", false,
     "<s><|user|>\nYou are a helpful assistant\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
     "<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n"
     "<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
    {"phi3_5_mini_instruct", "<s>", "<|endoftext|>", true,
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
     "there<|end|>\n"
     "<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n"
     "<|user|>\nAnother question<|end|>\n<|assistant|>\n"},
};

class FamilyTest : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(FamilyTest, RendersTheDocumentedPrompt) {
  const FamilyCase& c = GetParam();
  const ChatTemplate t = load(c.file);
  EXPECT_EQ(t.supports_system_role(), c.system_role);
  auto out = t.render(conversation(), true, tokens(c.bos, c.eos));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, c.expected);
}

INSTANTIATE_TEST_SUITE_P(ChatTemplates, FamilyTest, ::testing::ValuesIn(kFamilies),
                         [](const auto& info) { return std::string(info.param.file); });

TEST(ChatTemplateFamilies, WithoutGenerationPromptEndsAfterTheLastTurn) {
  const std::vector<ChatMessage> conv = {msg("system", "You are a helpful assistant"),
                                         msg("user", "Hello"), msg("assistant", "Hi there"),
                                         msg("user", "Who are you")};
  auto llama3 =
      load("llama3_instruct").render(conv, false, tokens("<|begin_of_text|>", "<|eot_id|>"));
  ASSERT_TRUE(llama3.ok()) << llama3.status().to_string();
  EXPECT_EQ(*llama3,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
            "assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>");
  // Phi-3.5 ends with eos_token when no generation prompt is asked for.
  auto phi = load("phi3_5_mini_instruct").render(conv, false, tokens("<s>", "<|endoftext|>"));
  ASSERT_TRUE(phi.ok()) << phi.status().to_string();
  EXPECT_EQ(*phi,
            "<|system|>\nYou are a helpful "
            "assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n<|endoftext|>");
}

struct RoleErrorCase {
  const char* file;
  const char* message;
};

class RoleOrderTest : public ::testing::TestWithParam<RoleErrorCase> {};

TEST_P(RoleOrderTest, TwoUserTurnsInARowRaise) {
  const RoleErrorCase& c = GetParam();
  auto out = load(c.file).render({msg("user", "a"), msg("user", "b")}, true, tokens("<s>", "</s>"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("raised an exception"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find(c.message), std::string::npos) << out.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    ChatTemplates, RoleOrderTest,
    ::testing::Values(
        RoleErrorCase{"llama2_chat",
                      "Conversation roles must alternate user/assistant/user/assistant/..."},
        RoleErrorCase{"gemma_it",
                      "Conversation roles must alternate user/assistant/user/assistant/..."},
        RoleErrorCase{"mistral_instruct_legacy",
                      "Conversation roles must alternate user/assistant/user/assistant/..."},
        RoleErrorCase{"mistral_v0_1_instruct",
                      "After the optional system message, conversation roles must alternate"},
        RoleErrorCase{"mistral_v0_3_instruct",
                      "After the optional system message, conversation roles must alternate"},
        RoleErrorCase{"mistral_nemo_instruct_2407",
                      "After the optional system message, conversation roles must alternate"}),
    [](const auto& info) { return std::string(info.param.file); });

TEST(ChatTemplateFamilies, RaisePointsAtTheCallInTheTemplate) {
  // llama2_chat is one line; raise_exception is called at byte 314 of it.
  auto out =
      load("llama2_chat").render({msg("user", "a"), msg("user", "b")}, true, tokens("<s>", "</s>"));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("at 1:314:"), std::string::npos) << out.status().message();
  // In the multi-line Mistral template the check is on line 11.
  auto v01 =
      load("mistral_v0_1_instruct").render({msg("assistant", "a")}, true, tokens("<s>", "</s>"));
  ASSERT_FALSE(v01.ok());
  EXPECT_NE(v01.status().message().find("at 11:13:"), std::string::npos) << v01.status().message();
}

TEST(ChatTemplateFamilies, GemmaRejectsASystemMessageWhenNotMerged) {
  ChatTemplateContext ctx = tokens("<bos>", "<eos>");
  ctx.merge_system_if_unsupported = false;
  auto out = load("gemma_it").render(conversation(), true, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("System role not supported"), std::string::npos);
}

ChatMessage from_json(const char* text) {
  auto m = ChatMessage::from_openai_json(nlohmann::ordered_json::parse(text));
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

// A weather tool, a tool call and its result: the tool-calling branches of the templates.
std::vector<ChatMessage> tool_conversation() {
  return {from_json(R"({"role": "system", "content": "Be brief."})"),
          from_json(R"({"role": "user", "content": "Weather in Paris?"})"),
          from_json(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call12345",
              "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]})"),
          from_json(R"({"role": "tool", "tool_call_id": "call12345", "content": "22C"})")};
}

ChatTemplateContext tool_context() {
  ChatTemplateContext ctx = tokens("<s>", "</s>");
  ctx.extra["tools"] = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Get the weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  return ctx;
}

TEST(ChatTemplateFamilies, Qwen25ToolCallingBranch) {
  auto out = load("qwen2_5_instruct").render(tool_conversation(), true, tool_context());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(
      *out,
      "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist "
      "with the user "
      "query.\n\nYou are provided with function signatures within <tools></tools> XML "
      "tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get "
      "the weather\", "
      "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
      "\"required\": "
      "[\"city\"]}}}\n</tools>\n\nFor each function call, return a json object with function name "
      "and arguments "
      "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
      "\"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n"
      "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n22C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n");
}

TEST(ChatTemplateFamilies, MistralV03ToolCallingBranch) {
  auto out = load("mistral_v0_3_instruct").render(tool_conversation(), true, tool_context());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(
      *out,
      "<s>[AVAILABLE_TOOLS] [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
      "\"description\": "
      "\"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
      "{\"type\": "
      "\"string\"}}, \"required\": [\"city\"]}}}][/AVAILABLE_TOOLS][INST] Weather in Paris?[/INST]"
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
      "\"call12345\"}]"
      "</s>[TOOL_RESULTS] {\"content\": 22C, \"call_id\": \"call12345\"}[/TOOL_RESULTS]");
}

TEST(ChatTemplateFamilies, Llama31ToolsInUserMessageWithIndentedJson) {
  auto out = load("llama3_1_instruct").render(tool_conversation(), true, tool_context());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<s><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting "
            "Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\nBe "
            "brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the "
            "following functions, please respond with a JSON for a function call with its proper "
            "arguments that best "
            "answers the given prompt.\n\nRespond in the format {\"name\": function name, "
            "\"parameters\": dictionary "
            "of argument name and its value}.Do not use variables.\n\n{\n    \"type\": "
            "\"function\",\n    \"function\": "
            "{\n        \"name\": \"get_weather\",\n        \"description\": \"Get the "
            "weather\",\n        "
            "\"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n "
            "               "
            "\"city\": {\n                    \"type\": \"string\"\n                }\n            "
            "},\n            "
            "\"required\": [\n                \"city\"\n            ]\n        }\n    "
            "}\n}\n\nWeather in Paris?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
            "\"parameters\": {\"city\": "
            "\"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"22C\"<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, Llama31TakesDateStringFromTheContext) {
  ChatTemplateContext ctx = tokens("<|begin_of_text|>", "<|eot_id|>");
  ctx.extra["date_string"] = "01 Jan 2025";
  auto out = load("llama3_1_instruct").render({msg("user", "Hello")}, true, ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
            "Date: December 2023\n"
            "Today Date: 01 Jan "
            "2025\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, Llama32DatesTheSystemPromptWithStrftimeNow) {
  setenv("TZ", "UTC", 1);  // strftime_now is local time, as in transformers
  tzset();
  ChatTemplateContext ctx = tokens("<|begin_of_text|>", "<|eot_id|>");
  ctx.now = 1721995200;  // 2024-07-26 12:00 UTC
  auto out = load("llama3_2_instruct").render({msg("user", "Hello")}, true, ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge "
            "Date: December 2023\n"
            "Today Date: 26 Jul "
            "2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// llama.cpp's Phi-3 vocabulary GGUF carries Phi-3-mini's template: the whole path from the
// file (template + BOS/EOS texts from its tokenizer) to the prompt.
TEST(ChatTemplateFamilies, Phi3VocabGgufEndToEnd) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-phi-3.gguf", path);
  auto gguf = io::GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto tmpl = ChatTemplate::from_gguf(*gguf);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  EXPECT_FALSE(tmpl->is_builtin());
  EXPECT_EQ(tmpl->source(), template_text("phi3_mini_instruct"));
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const ChatTemplateContext ctx = ChatTemplateContext::from_tokenizer(**tok);
  EXPECT_EQ(ctx.bos_token, "<s>");
  EXPECT_EQ(ctx.eos_token, "<|endoftext|>");
  auto out = tmpl->render(
      {msg("user", "Hello"), msg("assistant", "Hi there"), msg("user", "Who are you")}, true, ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out,
            "<s><|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n<|user|>\nWho are "
            "you<|end|>\n<|assistant|>\n");
}

}  // namespace
}  // namespace tally
