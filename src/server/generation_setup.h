// From a parsed completions or chat request and its tokenized prompts to a JobSpec: the
// server's own limits (max_tokens, n), max_tokens resolved against the context (once, into
// the engine's request), then the engine's rules through Engine::check_request (prompt length
// and tokens, sampling against the vocabulary, min_tokens, stop strings: one place, shared with
// submission), then the queue and rate limiter's allowance. Errors name the field: the
// engine's as Status::field(), never read from its message.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/generation_job.h"
#include "server/openai_request.h"
#include "server/server_context.h"

namespace tally::server {

struct GenerationInput {
  ApiKind kind = ApiKind::kCompletion;
  const GenerationParams* params = nullptr;
  std::vector<JobPrompt> prompts;
  const char* prompt_field = "prompt";  // "messages" for chat: named by context errors
};

std::optional<ApiError> prepare_generation(ServerContext& ctx, HttpExchange& exchange,
                                           GenerationInput input, JobSpec& spec);

// Checks and starts a GenerationJob (on the I/O thread), or answers the error.
void start_generation(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange,
                      GenerationInput input);

// Before any work that grows with the request: the model is served, and the client's request
// bucket is not empty (the token bucket is checked by prepare_generation, which knows the
// token count). 404 / 429.
std::optional<ApiError> check_model_and_request_rate(ServerContext& ctx, HttpExchange& exchange,
                                                     const std::string& model);

// Token ids from a request -> int32 ids inside the vocabulary; 400 naming field[i].
std::optional<ApiError> checked_token_ids(const std::vector<int64_t>& ids, int32_t n_vocab,
                                          const std::string& field, std::vector<int32_t>& out);

// The prompt tokens of a conversation (chat_handler.cpp): rendered by the chat template,
// BOS added when the model wants one and the template did not write it.
std::optional<ApiError> chat_prompt_tokens(const ServerContext& ctx,
                                           const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt, std::vector<int32_t>& out);

// The 404 for a model name that is not served.
ApiError unknown_model_error(const std::string& model);

}  // namespace tally::server
