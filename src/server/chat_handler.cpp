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

void handle_chat_completions(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  ChatRequest req;
  IgnoredFields ignored;
  if (auto e = parse_chat_request(exchange->request().body, req, ignored)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (!ctx.resolve_model(req.params.model)) {
    return reply_error(*exchange, unknown_model_error(req.params.model));
  }
  GenerationInput input;
  input.kind = ApiKind::kChat;
  input.params = &req.params;
  input.prompt_field = "messages";
  input.prompts.emplace_back();
  if (auto e = chat_prompt_tokens(ctx, req.messages, req.add_generation_prompt,
                                  input.prompts.back().tokens)) {
    return reply_error(*exchange, *e);
  }
  JobSpec spec;
  if (auto e = prepare_generation(ctx, *exchange, std::move(input), spec)) {
    return reply_error(*exchange, *e);
  }
  std::make_shared<GenerationJob>(ctx, std::move(exchange), std::move(spec))->start();
}

}  // namespace tally::server
