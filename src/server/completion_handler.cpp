// POST /v1/completions: prompts (text or token ids, one or a list) -> a GenerationJob.
#include <fmt/format.h>

#include "server/generation_setup.h"
#include "server/handlers.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

namespace {

std::optional<ApiError> tokenize_prompts(const ServerContext& ctx, const CompletionRequest& req,
                                         std::vector<JobPrompt>& out) {
  const Tokenizer& tok = ctx.tokenizer;
  if (static_cast<int32_t>(req.prompts.size()) > ctx.config.max_prompts) {
    return ApiError::bad_request(fmt::format("'prompt' lists {} prompts, at most {} are allowed",
                                             req.prompts.size(), ctx.config.max_prompts),
                                 "prompt");
  }
  for (size_t i = 0; i < req.prompts.size(); ++i) {
    JobPrompt prompt;
    if (const auto* text = std::get_if<std::string>(&req.prompts[i])) {
      prompt.tokens = tok.encode(*text, /*add_special=*/true, /*parse_special=*/true);
      if (prompt.tokens.empty() && tok.bos() >= 0) prompt.tokens.push_back(tok.bos());
      if (req.echo) prompt.echo = *text;
    } else {
      const auto& ids = std::get<std::vector<int64_t>>(req.prompts[i]);
      const std::string field = req.prompts.size() > 1 ? fmt::format("prompt[{}]", i) : "prompt";
      if (auto e = checked_token_ids(ids, tok.n_vocab(), field, prompt.tokens)) return e;
      if (req.echo) prompt.echo = tok.decode(prompt.tokens, /*skip_special=*/false);
    }
    out.push_back(std::move(prompt));
  }
  return std::nullopt;
}

}  // namespace

// Prompts are tokenized on a prompt worker; checks against the model, the token rate limit
// and the job are on the I/O thread.
void handle_completions(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  struct State {
    CompletionRequest req;
    GenerationInput input;
    std::optional<ApiError> error;
  };
  auto state = std::make_shared<State>();
  IgnoredFields ignored;
  if (auto e = parse_completion_request(exchange->request().body, state->req, ignored, ctx.config.request_sampling)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (auto e = check_model_and_request_rate(ctx, *exchange, state->req.params.model)) {
    return reply_error(*exchange, *e);
  }
  state->input.kind = ApiKind::kCompletion;
  state->input.params = &state->req.params;
  run_off_io_thread(
      ctx, [&ctx, state] { state->error = tokenize_prompts(ctx, state->req, state->input.prompts); },
      [&ctx, state, exchange = std::move(exchange)]() mutable {
        if (!exchange->connected()) return;
        if (state->error) return reply_error(*exchange, *state->error);
        start_generation(ctx, std::move(exchange), std::move(state->input));
      });
}

}  // namespace tally::server
