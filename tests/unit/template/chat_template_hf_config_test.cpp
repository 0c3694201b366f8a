// ChatTemplate::from_hf_config: tokenizer_config.json's chat_template as a string, as the
// list of named templates, absent, and wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "template/chat_template.h"

namespace tally {
namespace {

using nlohmann::json;

std::string render_one(const ChatTemplate& t) {
  std::vector<ChatMessage> messages(1);
  messages[0].role = "user";
  messages[0].content = "hi";
  auto out = t.render(messages, false, ChatTemplateContext());
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : std::string();
}

TEST(ChatTemplateHfConfig, StringTemplate) {
  auto t = ChatTemplate::from_hf_config(
      json{{"chat_template", "{% for m in messages %}[{{ m.content }}]{% endfor %}"}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_FALSE(t->is_builtin());
  EXPECT_EQ(render_one(*t), "[hi]");
}

TEST(ChatTemplateHfConfig, NamedListTakesDefaultOrTheNamedOne) {
  const json config = {
      {"chat_template",
       json::array({{{"name", "default"}, {"template", "D{{ messages[0].content }}"}},
                    {{"name", "tool_use"}, {"template", "T{{ messages[0].content }}"}}})}};
  auto def = ChatTemplate::from_hf_config(config);
  ASSERT_TRUE(def.ok()) << def.status().to_string();
  EXPECT_EQ(render_one(*def), "Dhi");
  auto tool = ChatTemplate::from_hf_config(config, "tool_use");
  ASSERT_TRUE(tool.ok()) << tool.status().to_string();
  EXPECT_EQ(render_one(*tool), "Thi");
  auto missing = ChatTemplate::from_hf_config(config, "rag");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.status().message().find("rag"), std::string::npos);
}

TEST(ChatTemplateHfConfig, AbsentOrEmptyIsTheBuiltinAndBadIsAnError) {
  auto absent = ChatTemplate::from_hf_config(json::object());
  ASSERT_TRUE(absent.ok());
  EXPECT_TRUE(absent->is_builtin());
  auto empty = ChatTemplate::from_hf_config(json{{"chat_template", ""}});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_builtin());
  auto number = ChatTemplate::from_hf_config(json{{"chat_template", 7}});
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().code(), ErrorCode::kFormat);
  auto unparsable = ChatTemplate::from_hf_config(json{{"chat_template", "{% if %}"}});
  ASSERT_FALSE(unparsable.ok());
  EXPECT_EQ(unparsable.status().code(), ErrorCode::kFormat);
  EXPECT_NE(unparsable.status().message().find("tokenizer_config.json"), std::string::npos);
  auto named_string = ChatTemplate::from_hf_config(json{{"chat_template", "x"}}, "tool_use");
  EXPECT_FALSE(named_string.ok());
}

}  // namespace
}  // namespace tally
