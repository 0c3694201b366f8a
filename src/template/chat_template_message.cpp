// ChatMessage from an OpenAI chat-completions message.
#include <string>

#include "template/chat_template.h"

namespace tally {
namespace {

template <typename Json>
Result<ChatMessage> parse_message(const Json& j) {
  if (!j.is_object()) return Status(ErrorCode::kInvalidArgument, "not a JSON object");
  ChatMessage m;
  auto role = j.find("role");
  if (role == j.end() || !role->is_string()) {
    return Status(ErrorCode::kInvalidArgument, "'role' must be a string");
  }
  m.role = role->template get<std::string>();
  m.extra = nlohmann::ordered_json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "role" || it.key() == "content") continue;
    // Through text: converts either JSON flavour; invalid UTF-8 becomes U+FFFD.
    m.extra[it.key()] = nlohmann::ordered_json::parse(
        it.value().dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  auto content = j.find("content");
  if (content == j.end() || content->is_null()) {
    m.extra["content"] = nullptr;  // templates test `message.content is none`
    return m;
  }
  if (content->is_string()) {
    m.content = content->template get<std::string>();
    return m;
  }
  if (!content->is_array()) {
    return Status(ErrorCode::kInvalidArgument,
                  "'content' must be a string, an array of parts or null");
  }
  // Text parts joined by newlines, as vLLM and llama.cpp do for text-only templates.
  bool first = true;
  for (const auto& part : *content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return Status(ErrorCode::kInvalidArgument,
                    "each content part needs a string 'type'");
    }
    const std::string type = part["type"].template get<std::string>();
    if (type != "text") {
      return make_error(ErrorCode::kUnsupported, "content part type '{}' is not supported",
                        type);
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return Status(ErrorCode::kInvalidArgument, "a text part needs a string 'text'");
    }
    if (!first) m.content += '\n';
    first = false;
    m.content += part["text"].template get<std::string>();
  }
  return m;
}

}  // namespace

Result<ChatMessage> ChatMessage::from_openai_json(const nlohmann::ordered_json& j) {
  return parse_message(j);
}
Result<ChatMessage> ChatMessage::from_openai_json(const nlohmann::json& j) {
  return parse_message(j);
}

}  // namespace tally
