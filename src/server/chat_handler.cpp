// POST /v1/chat/completions: messages rendered with the model's chat template, then a
// GenerationJob like completions.
#include "server/generation_setup.h"
#include "server/handlers.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

// Shared with /tokenize: the prompt tokens of a conversation. The template usually writes
// the BOS token's text itself; it is added only when the model wants one and the rendered
// text does not start with it.
std::optional<ApiError> chat_prompt_tokens(const ServerContext& ctx,
                                           const std::vector<ChatMessage>& messages,
                                           bool add_generation_prompt, std::vector<int32_t>& out) {
  auto text = ctx.chat.render(messages, add_generation_prompt);
  if (!text.ok()) return ApiError::bad_request(text.status().message(), "messages");
  const Tokenizer& tok = ctx.tokenizer;
  bool add_bos = tok.add_bos() && tok.bos() >= 0;
  if (add_bos && text->starts_with(tok.piece(tok.bos()))) add_bos = false;
  out.clear();
  if (add_bos) out.push_back(tok.bos());
  const auto body = tok.encode(*text, /*add_special=*/false, /*parse_special=*/true);
  out.insert(out.end(), body.begin(), body.end());
  return std::nullopt;
}

// The template is rendered and its text tokenized on a prompt worker; the rest as completions.
void handle_chat_completions(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  struct State {
    ChatRequest req;
    GenerationInput input;
    std::optional<ApiError> error;
  };
  auto state = std::make_shared<State>();
  IgnoredFields ignored;
  if (auto e = parse_chat_request(exchange->request().body, state->req, ignored, ctx.config.request_sampling)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (auto e = check_model_and_request_rate(ctx, *exchange, state->req.params.model)) {
    return reply_error(*exchange, *e);
  }
  state->input.kind = ApiKind::kChat;
  state->input.params = &state->req.params;
  state->input.prompt_field = "messages";
  state->input.prompts.emplace_back();
  run_off_io_thread(
      ctx,
      [&ctx, state] {
        state->error = chat_prompt_tokens(ctx, state->req.messages, state->req.add_generation_prompt,
                                          state->input.prompts.back().tokens);
      },
      [&ctx, state, exchange = std::move(exchange)]() mutable {
        if (!exchange->connected()) return;
        if (state->error) return reply_error(*exchange, *state->error);
        start_generation(ctx, std::move(exchange), std::move(state->input));
      });
}

}  // namespace tally::server
