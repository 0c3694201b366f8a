// The chat-specific half of openai_request.h: messages, logprobs as chat has them, and the
// /tokenize and /detokenize bodies.
#include <fmt/format.h>

#include <limits>

#include "server/generation_fields.h"
#include "server/json_fields.h"
#include "server/openai_request.h"

namespace tally::server {

using namespace json_fields;

namespace {

constexpr int64_t kMaxTopLogprobs = 20;

bool known_role(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" ||
         role == "tool" || role == "function";
}

// Each message through ChatMessage::from_openai_json (text parts joined, other keys kept
// for the template), plus a check of the role.
Error read_messages(const Json& o, std::vector<ChatMessage>& out) {
  const Json* v = find(o, "messages");
  if (!v) return ApiError::bad_request("'messages' is required", "messages");
  if (!v->is_array()) return wrong_type("messages", "an array", *v);
  if (v->empty()) return ApiError::bad_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < v->size(); ++i) {
    auto message = ChatMessage::from_openai_json((*v)[i]);
    if (!message.ok()) {
      return ApiError::bad_request(
          fmt::format("'messages[{}]': {}", i, message.status().message()), "messages");
    }
    if (!known_role(message->role)) {
      return ApiError::bad_request(
          fmt::format("'messages[{}].role' is '{}'; expected system, developer, user, assistant "
                      "or tool",
                      i, message->role),
          "messages");
    }
    out.push_back(std::move(*message));
  }
  return std::nullopt;
}

Error read_chat_logprobs(const Json& o, GenerationParams& p) {
  bool logprobs = false;
  TALLY_API_TRY(read_bool(o, "logprobs", logprobs));
  std::optional<int64_t> top;
  TALLY_API_TRY(read_int(o, "top_logprobs", 0, kMaxTopLogprobs, top));
  if (top && *top > 0 && !logprobs) {
    return ApiError::bad_request("'top_logprobs' needs 'logprobs' to be true", "top_logprobs");
  }
  if (logprobs) {
    p.logprobs = top ? static_cast<int32_t>(*top) : 0;
    p.request.sampling.logprobs = true;
    p.request.sampling.top_logprobs = p.logprobs;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest& out,
                                           IgnoredFields& ignored, const SamplingParams& defaults) {
  Json o;
  TALLY_API_TRY(parse_object(body, o));
  TALLY_API_TRY(read_generation_common(o, out.params, defaults));
  // max_completion_tokens is the newer name of max_tokens; it wins when both are given.
  TALLY_API_TRY(read_int(o, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(),
                         out.params.max_tokens));
  TALLY_API_TRY(read_messages(o, out.messages));
  TALLY_API_TRY(read_chat_logprobs(o, out.params));
  TALLY_API_TRY(read_bool(o, "add_generation_prompt", out.add_generation_prompt));
  std::vector<std::string_view> known = generation_common_fields();
  known.insert(known.end(),
               {"messages", "max_completion_tokens", "top_logprobs", "add_generation_prompt"});
  collect_unknown(o, known, ignored);
  return std::nullopt;
}

std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest& out,
                                               IgnoredFields& ignored) {
  Json o;
  TALLY_API_TRY(parse_object(body, o));
  TALLY_API_TRY(read_string(o, "model", out.model));
  if (const Json* prompt = find(o, "prompt")) {
    if (!prompt->is_string()) return wrong_type("prompt", "a string", *prompt);
    out.prompt = prompt->get<std::string>();
  } else if (find(o, "messages")) {
    TALLY_API_TRY(read_messages(o, out.messages));
  } else {
    return ApiError::bad_request("'prompt' or 'messages' is required", "prompt");
  }
  TALLY_API_TRY(read_bool(o, "add_special_tokens", out.add_special_tokens));
  TALLY_API_TRY(read_bool(o, "add_generation_prompt", out.add_generation_prompt));
  TALLY_API_TRY(read_bool(o, "return_token_strs", out.return_token_strs));
  collect_unknown(o,
                  {"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt",
                   "return_token_strs"},
                  ignored);
  return std::nullopt;
}

std::optional<ApiError> parse_detokenize_request(std::string_view body, DetokenizeRequest& out,
                                                 IgnoredFields& ignored) {
  Json o;
  TALLY_API_TRY(parse_object(body, o));
  TALLY_API_TRY(read_string(o, "model", out.model));
  const Json* tokens = find(o, "tokens");
  if (!tokens) return ApiError::bad_request("'tokens' is required", "tokens");
  if (!tokens->is_array()) return wrong_type("tokens", "an array of token ids", *tokens);
  for (size_t i = 0; i < tokens->size(); ++i) {
    int64_t id = 0;
    TALLY_API_TRY(to_int((*tokens)[i], fmt::format("tokens[{}]", i), 0,
                         std::numeric_limits<int32_t>::max(), id));
    out.tokens.push_back(id);
  }
  collect_unknown(o, {"model", "tokens"}, ignored);
  return std::nullopt;
}

}  // namespace tally::server
