// OpenAI response bodies and Server-Sent-Events chunks for completions and chat, built from
// what a GenerationJob collected. Every string goes through UTF-8 replacement when dumped,
// so no byte sequence can make invalid JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_types.h"

namespace tally::server {

enum class ApiKind { kCompletion, kChat };

struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, from the prefix cache (prompt_tokens_details)
};

// The log-probabilities of a run of tokens (one per sampled token).
struct TokenLogprobs {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top;  // [token][k]
  bool empty() const { return tokens.empty(); }
  void clear();
  void add(const EngineEvent& event);
};

// The bytes a token stands for (Tokenizer::token_bytes); may be part of a character.
using TokenBytes = std::function<std::string(int32_t)>;

struct ChoiceResult {
  int32_t index = 0;
  std::string text;
  FinishReason finish = FinishReason::kNone;
  std::optional<TokenLogprobs> logprobs;  // when the request asked for them
};

// "stop", "length", "abort"; null while running.
nlohmann::json finish_reason_json(FinishReason reason);

// The non-streamed body: text_completion or chat.completion.
std::string response_body(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                          const Usage& usage, const TokenBytes& token_bytes);

// One "data: {...}\n\n" event of a stream: a choice's new text (and its tokens' logprobs),
// or its end (finish set). `include_usage` adds "usage": null, as OpenAI does on every chunk
// but the last when usage was asked for.
struct StreamDelta {
  int32_t index = 0;
  std::string text;
  bool role = false;  // chat: the first chunk of a choice carries "role": "assistant"
  FinishReason finish = FinishReason::kNone;
  const TokenLogprobs* logprobs = nullptr;
  size_t text_offset = 0;  // completions logprobs: offset of this chunk's text in the choice
};
std::string stream_chunk(const ResponseMeta& meta, const StreamDelta& delta, bool include_usage,
                         const TokenBytes& token_bytes);
// The last chunk when usage was asked for: no choices, the usage of the whole request.
std::string stream_usage_chunk(const ResponseMeta& meta, const Usage& usage);
// An error inside a stream that already answered 200.
std::string stream_error_chunk(const std::string& error_json);

inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// nlohmann dump that turns invalid UTF-8 into U+FFFD instead of throwing.
std::string json_dump(const nlohmann::json& value);

}  // namespace tally::server
