#include "server/openai_response.h"

#include "tokenizer/utf8_stream.h"

namespace tally::server {

using Json = nlohmann::json;

namespace {

Json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json byte_array(const std::string& bytes) {
  Json out = Json::array();
  for (unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

// Completions: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{tok: lp}],
// "text_offset": [...]}, offsets counted in bytes from `offset`.
Json completion_logprobs_json(const TokenLogprobs& lp, const TokenBytes& token_bytes,
                              size_t offset) {
  Json tokens = Json::array(), values = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (size_t i = 0; i < lp.tokens.size(); ++i) {
    const std::string bytes = token_bytes(lp.tokens[i]);
    tokens.push_back(tok::utf8_valid(bytes));
    values.push_back(lp.logprobs[i]);
    Json top = Json::object();
    for (const auto& t : lp.top[i]) top[tok::utf8_valid(token_bytes(t.token))] = t.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += bytes.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(values)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{...}]}]}
Json chat_logprobs_json(const TokenLogprobs& lp, const TokenBytes& token_bytes) {
  Json content = Json::array();
  for (size_t i = 0; i < lp.tokens.size(); ++i) {
    const std::string bytes = token_bytes(lp.tokens[i]);
    Json top = Json::array();
    for (const auto& t : lp.top[i]) {
      const std::string tb = token_bytes(t.token);
      top.push_back({{"token", tok::utf8_valid(tb)}, {"logprob", t.logprob}, {"bytes", byte_array(tb)}});
    }
    content.push_back({{"token", tok::utf8_valid(bytes)},
                       {"logprob", lp.logprobs[i]},
                       {"bytes", byte_array(bytes)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

Json logprobs_json(ApiKind kind, const TokenLogprobs* lp, const TokenBytes& token_bytes,
                   size_t offset) {
  if (!lp) return nullptr;
  return kind == ApiKind::kChat ? chat_logprobs_json(*lp, token_bytes)
                                : completion_logprobs_json(*lp, token_bytes, offset);
}

Json envelope(const ResponseMeta& meta, bool chunk) {
  const char* object = meta.kind == ApiKind::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

void TokenLogprobs::clear() {
  tokens.clear();
  logprobs.clear();
  top.clear();
}

void TokenLogprobs::add(const EngineEvent& event) {
  tokens.push_back(event.token);
  logprobs.push_back(event.logprob.value_or(0.0f));
  top.push_back(event.top_logprobs);
}

std::string json_dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json finish_reason_json(FinishReason reason) {
  if (reason == FinishReason::kNone) return nullptr;
  return std::string(finish_reason_name(reason));
}

std::string response_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                          const Usage& usage, const TokenBytes& token_bytes) {
  Json body = envelope(meta, /*chunk=*/false);
  Json list = Json::array();
  for (const auto& c : choices) {
    const TokenLogprobs* lp = c.logprobs ? &*c.logprobs : nullptr;
    Json choice = {{"index", c.index}};
    if (meta.kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = logprobs_json(meta.kind, lp, token_bytes, 0);
    choice["finish_reason"] = finish_reason_json(c.finish);
    list.push_back(std::move(choice));
  }
  body["choices"] = std::move(list);
  body["usage"] = usage_json(usage);
  return json_dump(body);
}

std::string stream_chunk(const ResponseMeta& meta, const StreamDelta& d, bool include_usage,
                         const TokenBytes& token_bytes) {
  Json body = envelope(meta, /*chunk=*/true);
  Json choice = {{"index", d.index}};
  if (meta.kind == ApiKind::kChat) {
    Json delta = Json::object();
    if (d.role) delta["role"] = "assistant";
    if (!d.text.empty() || d.role) delta["content"] = d.text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = d.text;
  }
  choice["logprobs"] = logprobs_json(meta.kind, d.logprobs, token_bytes, d.text_offset);
  choice["finish_reason"] = finish_reason_json(d.finish);
  body["choices"] = Json::array({std::move(choice)});
  if (include_usage) body["usage"] = nullptr;
  return "data: " + json_dump(body) + "\n\n";
}

std::string stream_usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  Json body = envelope(meta, /*chunk=*/true);
  body["choices"] = Json::array();
  body["usage"] = usage_json(usage);
  return "data: " + json_dump(body) + "\n\n";
}

std::string stream_error_chunk(const std::string& error_json) {
  return "data: " + error_json + "\n\n";
}

}  // namespace tally::server
