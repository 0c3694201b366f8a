// ChatTemplate as the server uses it: from a GGUF file (or its absence), OpenAI messages,
// the context variables, the system-role merge and the built-in fallback.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "template/chat_template.h"

namespace tally {
namespace {

ChatMessage msg(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

// A tensor-less GGUF file in memory, holding `set` keys.
struct MemoryGguf {
  std::vector<uint8_t> bytes;
  io::GgufFile parse() const {
    auto f = io::GgufFile::parse(bytes, "test.gguf");
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return std::move(f).value();
  }
};

template <typename F>
MemoryGguf make_gguf(F&& set) {
  io::GgufWriter w;
  w.set_string("general.architecture", "llama");
  set(w);
  return MemoryGguf{w.to_bytes()};
}

TEST(ChatTemplateApi, FromGgufUsesTheModelsTemplate) {
  const auto file = make_gguf([](io::GgufWriter& w) {
    w.set_string("tokenizer.chat_template",
                 "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}");
  });
  auto t = ChatTemplate::from_gguf(file.parse());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_FALSE(t->is_builtin());
  auto out = t->render({msg("user", "hi")}, true, {});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "[user:hi]");
}

TEST(ChatTemplateApi, FromGgufWithoutTemplateFallsBackToChatMl) {
  for (const bool empty : {false, true}) {
    const auto file = make_gguf([&](io::GgufWriter& w) {
      if (empty) w.set_string("tokenizer.chat_template", "");
    });
    auto t = ChatTemplate::from_gguf(file.parse());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_TRUE(t->is_builtin());
    EXPECT_EQ(t->source(), ChatTemplate::builtin_source());
    auto out = t->render(
        {msg("system", "S"), msg("user", "U"), msg("assistant", "A"), msg("user", "V")}, true, {});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out,
              "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>"
              "assistant\nA<|im_end|>\n"
              "<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n");
    auto no_prompt = t->render({msg("user", "U")}, false, {});
    ASSERT_TRUE(no_prompt.ok());
    EXPECT_EQ(*no_prompt, "<|im_start|>user\nU<|im_end|>\n");
  }
}

TEST(ChatTemplateApi, FromGgufNamedVariant) {
  const auto file = make_gguf([](io::GgufWriter& w) {
    w.set_string("tokenizer.chat_template", "default");
    w.set_string("tokenizer.chat_template.tool_use", "tools");
  });
  auto t = ChatTemplate::from_gguf(file.parse(), "tool_use");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->source(), "tools");
}

TEST(ChatTemplateApi, FromGgufErrorsNameTheKeyAndPosition) {
  const auto bad_type =
      make_gguf([](io::GgufWriter& w) { w.set_u32("tokenizer.chat_template", 7); });
  auto t1 = ChatTemplate::from_gguf(bad_type.parse());
  ASSERT_FALSE(t1.ok());
  EXPECT_EQ(t1.status().code(), ErrorCode::kFormat);
  EXPECT_NE(t1.status().message().find("tokenizer.chat_template is a"), std::string::npos)
      << t1.status().message();

  const auto bad_syntax = make_gguf(
      [](io::GgufWriter& w) { w.set_string("tokenizer.chat_template", "ok\n{% for x in y %}"); });
  auto t2 = ChatTemplate::from_gguf(bad_syntax.parse());
  ASSERT_FALSE(t2.ok());
  EXPECT_EQ(t2.status().code(), ErrorCode::kFormat);
  EXPECT_EQ(t2.status().message(),
            "test.gguf: tokenizer.chat_template: chat template: template syntax error at 2:4: "
            "'for' is never closed: expected 'endfor'");
}

TEST(ChatTemplateApi, OpenAiMessages) {
  auto text =
      ChatMessage::from_openai_json(nlohmann::json::parse(R"({"role": "user", "content": "hi"})"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->role, "user");
  EXPECT_EQ(text->content, "hi");

  auto parts = ChatMessage::from_openai_json(nlohmann::json::parse(
      R"({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "bob"})"));
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  EXPECT_EQ(parts->content, "a\nb");
  EXPECT_EQ(parts->extra["name"], "bob");

  auto image = ChatMessage::from_openai_json(nlohmann::json::parse(
      R"({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]})"));
  ASSERT_FALSE(image.ok());
  EXPECT_EQ(image.status().code(), ErrorCode::kUnsupported);

  EXPECT_EQ(
      ChatMessage::from_openai_json(nlohmann::json::parse(R"({"content": "x"})")).status().code(),
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      ChatMessage::from_openai_json(nlohmann::json::parse(R"({"role": "user", "content": 5})"))
          .status()
          .code(),
      ErrorCode::kInvalidArgument);
}

TEST(ChatTemplateApi, NullContentAndExtraFieldsReachTheTemplate) {
  auto t = ChatTemplate::from_source(
      "{% for m in messages %}{{ m.role }}:{{ m.content is none }}:{{ m.tool_calls|length if "
      "m.tool_calls is defined "
      "else '-' }};{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto call = ChatMessage::from_openai_json(nlohmann::ordered_json::parse(
      R"({"role": "assistant", "content": null, "tool_calls": [{"id": "1"}, {"id": "2"}]})"));
  ASSERT_TRUE(call.ok());
  auto out = t->render({msg("user", "q"), *call}, false, {});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "user:False:-;assistant:True:2;");
}

TEST(ChatTemplateApi, ContextVariables) {
  auto t = ChatTemplate::from_source(
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools[0].name }}|"
      "{{ enable_thinking }}|{{ messages|length }}");
  ASSERT_TRUE(t.ok());
  ChatTemplateContext ctx;
  ctx.bos_token = "<s>";
  ctx.eos_token = "</s>";
  ctx.extra["tools"] = nlohmann::ordered_json::parse(R"([{"name": "f"}])");
  ctx.extra["enable_thinking"] = false;
  ctx.extra["messages"] = "ignored: the render call's messages win";
  auto out = t->render({msg("user", "q")}, true, ctx);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<s>|</s>|True|f|False|1");
}

TEST(ChatTemplateApi, SystemRoleProbeAndMerge) {
  auto drops = ChatTemplate::from_source(
      "{% for m in messages if m.role != 'system' %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  ASSERT_TRUE(drops.ok());
  EXPECT_FALSE(drops->supports_system_role());
  auto merged =
      drops->render({msg("system", "S"), msg("user", "U"), msg("assistant", "A")}, false, {});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, "<user>S\nU<assistant>A");
  // A system message with no user message after it becomes a user message.
  auto alone = drops->render({msg("system", "S")}, false, {});
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, "<user>S");
  ChatTemplateContext keep;
  keep.merge_system_if_unsupported = false;
  auto kept = drops->render({msg("system", "S"), msg("user", "U")}, false, keep);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, "<user>U");

  EXPECT_TRUE(ChatTemplate::builtin().supports_system_role());
}

TEST(ChatTemplateApi, RenderLimitsComeFromTheContext) {
  auto t = ChatTemplate::from_source("{% for m in messages %}{{ m.content }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  ChatTemplateContext ctx;
  ctx.limits.max_output_bytes = 10;
  auto out = t->render({msg("user", std::string(100, 'x'))}, true, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kOutOfRange);
}

TEST(ChatTemplateApi, CopiesShareTheParsedTemplate) {
  auto t = ChatTemplate::from_source("{{ messages[0].content }}");
  ASSERT_TRUE(t.ok());
  const ChatTemplate copy = *t;
  auto a = t->render({msg("user", "one")}, true, {});
  auto b = copy.render({msg("user", "two")}, true, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, "one");
  EXPECT_EQ(*b, "two");
}

}  // namespace
}  // namespace tally
