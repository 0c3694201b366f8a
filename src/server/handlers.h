// The endpoints. Each answers its exchange (now, or later from a GenerationJob); all run on
// the I/O thread. Authentication has already been checked by the router.
#pragma once

#include <memory>

#include "server/http_types.h"
#include "server/server_context.h"

namespace tally::server {

// POST /v1/completions
void handle_completions(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// POST /v1/chat/completions
void handle_chat_completions(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// GET /v1/models and GET /v1/models/{id}
void handle_models(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// GET /health: 200 while the process serves (liveness).
void handle_health(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// GET /ready: 200 when new requests are taken, 503 while draining (readiness).
void handle_ready(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// GET /metrics
void handle_metrics(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
// POST /tokenize, POST /detokenize
void handle_tokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);
void handle_detokenize(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange);

}  // namespace tally::server
