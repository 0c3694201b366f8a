// POST /tokenize and /detokenize, as vLLM answers them:
//   {"count": n, "max_model_len": m, "tokens": [...], "token_strs": [...]?} / {"prompt": "..."}
#include <nlohmann/json.hpp>

#include "server/generation_setup.h"
#include "server/handlers.h"
#include "server/openai_response.h"
#include "tokenizer/utf8_stream.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

void handle_tokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  TokenizeRequest req;
  IgnoredFields ignored;
  if (auto e = parse_tokenize_request(exchange->request().body, req, ignored)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (!ctx.resolve_model(req.model)) return reply_error(*exchange, unknown_model_error(req.model));
  const auto decision = ctx.rate_limiter.admit(ServerContext::rate_client(*exchange), 0);
  if (!decision.allowed) return reply_error(*exchange, rate_limit_error(decision));
  std::vector<int32_t> tokens;
  if (req.prompt) {
    tokens = ctx.tokenizer.encode(*req.prompt, req.add_special_tokens, /*parse_special=*/true);
  } else if (auto e = chat_prompt_tokens(ctx, req.messages, req.add_generation_prompt, tokens)) {
    return reply_error(*exchange, *e);
  }
  nlohmann::json body = {
      {"count", tokens.size()}, {"max_model_len", ctx.engine.max_model_len()}, {"tokens", tokens}};
  if (req.return_token_strs) {
    nlohmann::json strs = nlohmann::json::array();
    for (int32_t id : tokens) strs.push_back(tok::utf8_valid(ctx.tokenizer.piece(id)));
    body["token_strs"] = std::move(strs);
  }
  reply_json(*exchange, 200, json_dump(body));
}

void handle_detokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  DetokenizeRequest req;
  IgnoredFields ignored;
  if (auto e = parse_detokenize_request(exchange->request().body, req, ignored)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (!ctx.resolve_model(req.model)) return reply_error(*exchange, unknown_model_error(req.model));
  std::vector<int32_t> ids;
  if (auto e = checked_token_ids(req.tokens, ctx.tokenizer.n_vocab(), "tokens", ids)) {
    return reply_error(*exchange, *e);
  }
  // Control tokens (BOS, EOS) give no text, so /tokenize then /detokenize is the prompt again.
  const std::string text = tok::utf8_valid(ctx.tokenizer.decode(ids, /*skip_special=*/true));
  reply_json(*exchange, 200, json_dump({{"prompt", text}}));
}

}  // namespace tally::server
