#include "server/generation_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/unix_time.h"
#include "server/queued_bytes.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

namespace {

// OpenAI's default for completions; chat defaults to the rest of the context.
constexpr int64_t kDefaultCompletionTokens = 16;

std::optional<ApiError> resolve_max_tokens(const ServerContext& ctx, const GenerationInput& in,
                                           int64_t longest_prompt, int32_t& out) {
  const int64_t context = ctx.engine.max_model_len();
  const int64_t limit = ctx.config.max_tokens_limit;
  const int64_t room = context - longest_prompt;
  const auto& given = in.params->max_tokens;
  if (given) {
    if (limit > 0 && *given > limit) {
      return ApiError::bad_request(
          fmt::format("'max_tokens' is {}, more than this server's limit of {}", *given, limit),
          "max_tokens");
    }
    // A prompt that leaves no room at all is the engine's error (naming the prompt).
    if (*given > room && room > 0) {
      return ApiError::bad_request(
          fmt::format("This model's maximum context length is {} tokens. However, you requested "
                      "{} tokens ({} in the {}, {} for the completion). Please reduce the length "
                      "of the {} or the completion.",
                      context, longest_prompt + *given, longest_prompt, in.prompt_field, *given,
                      in.prompt_field),
          "max_tokens");
    }
    out = static_cast<int32_t>(*given);
    return std::nullopt;
  }
  int64_t value = in.kind == ApiKind::kCompletion ? kDefaultCompletionTokens : room;
  if (limit > 0) value = std::min(value, limit);
  out = static_cast<int32_t>(std::max<int64_t>(1, std::min(value, room)));
  return std::nullopt;
}

int64_t longest_prompt(const GenerationInput& in) {
  int64_t longest = 0;
  for (const auto& prompt : in.prompts) {
    longest = std::max(longest, static_cast<int64_t>(prompt.tokens.size()));
  }
  return longest;
}

// The server's own limit on n; every rule of the engine is Engine::check_request's.
std::optional<ApiError> check_server_limits(const ServerContext& ctx, const GenerationParams& p) {
  if (p.request.n > ctx.config.max_n) {
    return ApiError::bad_request(
        fmt::format("'n' is {}, more than this server's limit of {}", p.request.n,
                    ctx.config.max_n),
        "n");
  }
  return std::nullopt;
}

// The engine's rules for each prompt's request, its errors named by the field at fault (the
// API's name for the prompt: "prompt" or "messages").
std::optional<ApiError> check_with_engine(const ServerContext& ctx, const GenerationInput& in,
                                          EngineRequest& request) {
  for (const auto& prompt : in.prompts) {
    request.prompt = prompt.tokens;
    const Status st = ctx.engine.check_request(request);
    if (st.ok()) continue;
    const std::string_view field = st.field();
    return ApiError::bad_request(st.message(),
                                 field == "prompt" ? in.prompt_field : std::string(field));
  }
  request.prompt.clear();
  return std::nullopt;
}

// Prices each prompt's engine request (queued_bytes.h) and checks the sum against what the
// queue may still hold: 503 while other requests hold the budget, 400 when this request
// alone is larger than all of it (waiting would not help).
std::optional<ApiError> charge_queued_bytes(const ServerContext& ctx, const GenerationParams& p,
                                            std::vector<JobPrompt>& prompts) {
  int64_t stop_bytes = 0;
  for (const auto& stop : p.request.stop) stop_bytes += static_cast<int64_t>(stop.size());
  int64_t total = 0;
  for (auto& prompt : prompts) {
    prompt.queued_bytes = queued_request_bytes(
        {static_cast<int64_t>(prompt.tokens.size()), p.request.n, ctx.tokenizer.n_vocab(),
         static_cast<int64_t>(p.request.sampling.logit_bias.size()), stop_bytes});
    total += prompt.queued_bytes;
  }
  const int64_t budget = ctx.config.max_queued_bytes;
  if (budget <= 0) return std::nullopt;
  if (total > budget) {
    return ApiError::bad_request(
        fmt::format("this request would hold {} bytes while queued, more than the server's "
                    "--max-queued-bytes of {}: ask for fewer prompts, a smaller n or shorter "
                    "prompts",
                    total, budget));
  }
  if (ctx.queued_bytes + total > budget) {
    return ApiError::overloaded(
        fmt::format("the requests waiting for the engine hold {} of the {} bytes they may "
                    "(--max-queued-bytes); try again later",
                    ctx.queued_bytes, budget));
  }
  return std::nullopt;
}

}  // namespace

void start_generation(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange,
                      GenerationInput input) {
  JobSpec spec;
  if (auto e = prepare_generation(ctx, *exchange, std::move(input), spec)) {
    return reply_error(*exchange, *e);
  }
  std::make_shared<GenerationJob>(ctx, std::move(exchange), std::move(spec))->start();
}

std::optional<ApiError> check_model_and_request_rate(ServerContext& ctx, HttpExchange& exchange,
                                                     const std::string& model) {
  if (!ctx.resolve_model(model)) return unknown_model_error(model);
  const auto decision = ctx.rate_limiter.peek(ServerContext::rate_client(exchange));
  if (!decision.allowed) return rate_limit_error(decision);
  return std::nullopt;
}

ApiError unknown_model_error(const std::string& model) {
  return ApiError::not_found(fmt::format("The model `{}` does not exist.", model), "model",
                             "model_not_found");
}

std::optional<ApiError> checked_token_ids(const std::vector<int64_t>& ids, int32_t n_vocab,
                                          const std::string& field, std::vector<int32_t>& out) {
  out.clear();
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n_vocab) {
      return ApiError::bad_request(
          fmt::format("'{}[{}]' is token id {}, outside the vocabulary [0, {})", field, i, ids[i],
                      n_vocab),
          field.substr(0, field.find('[')));
    }
    out.push_back(static_cast<int32_t>(ids[i]));
  }
  return std::nullopt;
}

std::optional<ApiError> prepare_generation(ServerContext& ctx, HttpExchange& exchange,
                                           GenerationInput in, JobSpec& spec) {
  const GenerationParams& p = *in.params;
  const auto model = ctx.resolve_model(p.model);
  if (!model) return unknown_model_error(p.model);
  exchange.log().model = *model;
  if (auto e = check_server_limits(ctx, p)) return e;
  // The request as the engine will run it: the parsed fields, max_tokens resolved once.
  spec.request = p.request;
  if (auto e = resolve_max_tokens(ctx, in, longest_prompt(in), spec.request.max_tokens)) return e;
  if (auto e = check_with_engine(ctx, in, spec.request)) return e;

  if (auto e = charge_queued_bytes(ctx, p, in.prompts)) return e;

  int64_t reserve = 0;
  for (const auto& prompt : in.prompts) {
    reserve += static_cast<int64_t>(prompt.tokens.size()) +
               int64_t{spec.request.max_tokens} * spec.request.n;
  }
  spec.rate_client = ServerContext::rate_client(exchange);
  const auto decision = ctx.rate_limiter.admit(spec.rate_client, reserve);
  if (!decision.allowed) return rate_limit_error(decision);
  spec.reserved_tokens = reserve;

  const bool chat = in.kind == ApiKind::kChat;
  spec.meta = {in.kind, (chat ? "chatcmpl-" : "cmpl-") + exchange.log().request_id, unix_seconds_now(),
               *model};
  spec.prompts = std::move(in.prompts);
  spec.stream = p.stream;
  spec.include_usage = p.include_usage;
  spec.logprobs = p.logprobs >= 0;
  return std::nullopt;
}

}  // namespace tally::server
