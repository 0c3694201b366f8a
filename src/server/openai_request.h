// OpenAI request bodies -> plain structs, checked field by field. Every error names the field
// (ApiError::param) and says what was expected and what came. Fields this server does not
// know are collected (the caller logs them) and otherwise ignored, as vLLM does, so clients
// that send extra fields work. JSON null counts as absent.
//
// Checks that need the model (vocabulary, context length, prompt tokens) are left to the
// handlers; these functions check only shapes and ranges.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/engine_types.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "template/chat_template.h"

namespace tally::server {

// What completions and chat share. The fields the engine runs on are read straight into
// `request`, the engine's own request type, which goes on to the engine (and its RequestSpec
// part to the scheduler) as it is; prepare_generation (generation_setup.h) only adds the
// prompt and the resolved max_tokens, and judges it by the engine's rules
// (Engine::check_request).
struct GenerationParams {
  std::string model;                  // "" = not given (the first served name)
  // max_tokens / max_completion_tokens as the client sent it (absent: a default, resolved
  // against the context into request.max_tokens).
  std::optional<int64_t> max_tokens;
  // sampling (OpenAI defaults: temperature 1, top_p 1, no top_k), n, min_tokens, ignore_eos,
  // stop, cache_salt (vLLM's field: only requests with the same salt share cached KV).
  EngineRequest request;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t logprobs = -1;       // top log-probabilities per token; -1 = no logprobs
  std::string user;
};

// A prompt of a completions request: text, or token ids used as given.
using PromptInput = std::variant<std::string, std::vector<int64_t>>;

struct CompletionRequest {
  GenerationParams params;
  std::vector<PromptInput> prompts;  // one choice set per prompt (a list of prompts = batch)
  bool echo = false;
};

struct ChatRequest {
  GenerationParams params;
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;
};

// Request fields that were present but are not used.
using IgnoredFields = std::vector<std::string>;

// OpenAI's defaults (temperature 1, no top-k / top-p / min-p cut, penalties over the whole
// output, a random seed): what a field a request does not send gets, unless the model's own
// defaults (ServerConfig::request_sampling) replace some of them.
SamplingParams openai_sampling_defaults();

// `defaults`: the sampling a request starts from; the fields it sends override them.
std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest& out,
                                                 IgnoredFields& ignored,
                                                 const SamplingParams& defaults = openai_sampling_defaults());
std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest& out,
                                           IgnoredFields& ignored,
                                           const SamplingParams& defaults = openai_sampling_defaults());

// /tokenize: {"prompt": "..."} or {"messages": [...]}, "add_special_tokens", ...
struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;
  std::vector<ChatMessage> messages;
  bool add_special_tokens = true;
  bool add_generation_prompt = true;
  bool return_token_strs = false;
};
std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest& out,
                                               IgnoredFields& ignored);

// /detokenize: {"tokens": [ids]}
struct DetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;
};
std::optional<ApiError> parse_detokenize_request(std::string_view body, DetokenizeRequest& out,
                                                 IgnoredFields& ignored);

}  // namespace tally::server
