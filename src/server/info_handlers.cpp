// The small read-only endpoints: models, liveness, readiness, metrics.
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/handlers.h"
#include "server/openai_response.h"

namespace tally::server {

namespace {

nlohmann::json model_json(const ServerContext& ctx, const std::string& name) {
  return {{"id", name},
          {"object", "model"},
          {"created", ctx.started_unix},
          {"owned_by", "tally"},
          {"root", name},  // the model id, as vLLM: never the server's file path
          {"max_model_len", ctx.engine.max_model_len()}};
}

}  // namespace

void handle_models(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  const std::string& path = exchange->request().path;
  constexpr std::string_view kPrefix = "/v1/models/";
  if (path.size() > kPrefix.size() && path.starts_with(kPrefix)) {
    const std::string name = path.substr(kPrefix.size());
    if (!ctx.resolve_model(name)) {
      return reply_error(*exchange, ApiError::not_found("The model `" + name + "` does not exist.",
                                                        "model", "model_not_found"));
    }
    return reply_json(*exchange, 200, json_dump(model_json(ctx, name)));
  }
  nlohmann::json data = nlohmann::json::array();
  for (const auto& name : ctx.config.served_model_names) data.push_back(model_json(ctx, name));
  reply_json(*exchange, 200, json_dump({{"object", "list"}, {"data", std::move(data)}}));
}

void handle_health(ServerContext&, std::shared_ptr<HttpExchange> exchange) {
  reply_json(*exchange, 200, R"({"status":"ok"})");
}

void handle_ready(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  if (ctx.draining) {
    return reply_error(*exchange, ApiError::overloaded("the server is shutting down"));
  }
  reply_json(*exchange, 200, R"({"status":"ready"})");
}

void handle_metrics(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange) {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  if (ctx.observer) response.body = ctx.observer->render_metrics();
  exchange->respond(std::move(response));
}

}  // namespace tally::server
