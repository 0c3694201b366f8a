// The OpenAI wire format as the load generator uses it: the streaming request body for
// /v1/completions or /v1/chat/completions (usage asked for via stream_options.include_usage),
// and what one SSE data payload carries (text, usage, an error, or the end).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tally::loadgen {

enum class ApiKind { kCompletions, kChat };

struct ChatMessage {
  std::string role;  // "user" or "assistant"
  std::string content;
};

struct RequestBodyParams {
  std::string model;
  ApiKind kind = ApiKind::kCompletions;
  std::string prompt;                 // completions
  std::vector<ChatMessage> messages;  // chat
  int max_tokens = 16;
  bool ignore_eos = false;
  double temperature = 0.0;
};

// The JSON body of one streaming request.
std::string request_body(const RequestBodyParams& p);

struct StreamChunk {
  bool done = false;  // "[DONE]"
  std::string text;   // choices[0].text or choices[0].delta.content ("" when none)
  std::optional<int64_t> prompt_tokens;      // usage, when the chunk has it
  std::optional<int64_t> completion_tokens;  // usage, when the chunk has it
  std::string error;                         // an {"error": ...} event's message
};

// One SSE data payload; an error Status-like message in `parse_error` when it is not JSON
// of the expected shape.
StreamChunk parse_stream_chunk(const std::string& data, std::string& parse_error);

// The message of an OpenAI error body ({"error": {"message": ...}}), or the body cut to 200
// bytes when it is not one.
std::string error_message_of_body(const std::string& body);

}  // namespace tally::loadgen
