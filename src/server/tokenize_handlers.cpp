// POST /tokenize and /detokenize, as vLLM answers them:
//   {"count": n, "max_model_len": m, "tokens": [...], "token_strs": [...]?} / {"prompt": "..."}
#include <nlohmann/json.hpp>

#include "server/generation_setup.h"
#include "server/handlers.h"
#include "server/openai_response.h"
#include "tokenizer/utf8_stream.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

namespace {

// The request bucket is taken here (these requests use no tokens of the token bucket).
std::optional<ApiError> admit_token_route(ServerContext& ctx, HttpExchange& exchange,
                                          const std::string& model) {
  if (!ctx.resolve_model(model)) return unknown_model_error(model);
  const auto decision = ctx.rate_limiter.admit(ServerContext::rate_client(exchange), 0);
  if (!decision.allowed) return rate_limit_error(decision);
  return std::nullopt;
}

}  // namespace

// Tokenizing (and rendering a conversation) runs on a prompt worker.
void handle_tokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  struct State {
    TokenizeRequest req;
    std::vector<int32_t> tokens;
    std::optional<ApiError> error;
    nlohmann::json body;
  };
  auto state = std::make_shared<State>();
  IgnoredFields ignored;
  if (auto e = parse_tokenize_request(exchange->request().body, state->req, ignored)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (auto e = admit_token_route(ctx, *exchange, state->req.model)) {
    return reply_error(*exchange, *e);
  }
  run_off_io_thread(
      ctx,
      [&ctx, state] {
        const TokenizeRequest& req = state->req;
        auto& tokens = state->tokens;
        if (req.prompt) {
          tokens = ctx.tokenizer.encode(*req.prompt, req.add_special_tokens, /*parse_special=*/true);
        } else if (auto e =
                       chat_prompt_tokens(ctx, req.messages, req.add_generation_prompt, tokens)) {
          state->error = std::move(e);
          return;
        }
        state->body = {{"count", tokens.size()},
                       {"max_model_len", ctx.engine.max_model_len()},
                       {"tokens", tokens}};
        if (req.return_token_strs) {
          nlohmann::json strs = nlohmann::json::array();
          for (int32_t id : tokens) strs.push_back(tok::utf8_valid(ctx.tokenizer.piece(id)));
          state->body["token_strs"] = std::move(strs);
        }
      },
      [state, exchange = std::move(exchange)] {
        if (state->error) return reply_error(*exchange, *state->error);
        reply_json(*exchange, 200, json_dump(state->body));
      });
}

// Decoding runs on a prompt worker.
void handle_detokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  struct State {
    std::vector<int32_t> ids;
    std::string text;
  };
  auto state = std::make_shared<State>();
  DetokenizeRequest req;
  IgnoredFields ignored;
  if (auto e = parse_detokenize_request(exchange->request().body, req, ignored)) {
    return reply_error(*exchange, *e);
  }
  log_ignored_fields(*exchange, ignored);
  if (auto e = admit_token_route(ctx, *exchange, req.model)) return reply_error(*exchange, *e);
  if (auto e = checked_token_ids(req.tokens, ctx.tokenizer.n_vocab(), "tokens", state->ids)) {
    return reply_error(*exchange, *e);
  }
  run_off_io_thread(
      ctx,
      [&ctx, state] {
        // Control tokens (BOS, EOS) give no text, so /tokenize then /detokenize is the prompt.
        state->text = tok::utf8_valid(ctx.tokenizer.decode(state->ids, /*skip_special=*/true));
      },
      [state, exchange = std::move(exchange)] {
        reply_json(*exchange, 200, json_dump({{"prompt", state->text}}));
      });
}

}  // namespace tally::server
