#include "loadgen/openai_protocol.h"

#include <nlohmann/json.hpp>

namespace tally::loadgen {

using Json = nlohmann::json;

std::string request_body(const RequestBodyParams& p) {
  Json body = {{"model", p.model},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"temperature", p.temperature},
               {"max_tokens", p.max_tokens}};
  if (p.kind == ApiKind::kChat) {
    Json messages = Json::array();
    for (const auto& m : p.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(messages);
    body["max_completion_tokens"] = p.max_tokens;
  } else {
    body["prompt"] = p.prompt;
  }
  if (p.ignore_eos) body["ignore_eos"] = true;
  // Invalid UTF-8 in a prompt (a ShareGPT file) becomes U+FFFD rather than an exception.
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

std::string message_of_error(const Json& error) {
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    return error["message"].get<std::string>();
  }
  return error.dump();
}

void read_usage(const Json& usage, StreamChunk& out) {
  if (!usage.is_object()) return;
  if (auto it = usage.find("prompt_tokens"); it != usage.end() && it->is_number_integer()) {
    out.prompt_tokens = it->get<int64_t>();
  }
  if (auto it = usage.find("completion_tokens"); it != usage.end() && it->is_number_integer()) {
    out.completion_tokens = it->get<int64_t>();
  }
}

}  // namespace

StreamChunk parse_stream_chunk(const std::string& data, std::string& parse_error) {
  StreamChunk out;
  parse_error.clear();
  if (data == "[DONE]") {
    out.done = true;
    return out;
  }
  const Json j = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    parse_error = "malformed SSE event (not a JSON object): " + data.substr(0, 120);
    return out;
  }
  if (auto it = j.find("error"); it != j.end()) {
    out.error = message_of_error(*it);
    return out;
  }
  if (auto it = j.find("usage"); it != j.end()) read_usage(*it, out);
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) {
    parse_error = "malformed SSE event (no 'choices' list): " + data.substr(0, 120);
    return out;
  }
  if (choices->empty()) return out;  // the usage chunk
  const Json& c = (*choices)[0];
  if (!c.is_object()) {
    parse_error = "malformed SSE event (a choice is not an object)";
    return out;
  }
  const Json* text = nullptr;
  if (auto t = c.find("text"); t != c.end()) text = &*t;
  if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
    if (auto t = d->find("content"); t != d->end()) text = &*t;
  }
  if (text && text->is_string()) out.text = text->get<std::string>();
  return out;
}

std::string error_message_of_body(const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) return message_of_error(j["error"]);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace tally::loadgen
