#include "server/server_context.h"

#include <spdlog/spdlog.h>

#include "server/api_error.h"
#include "server/client_text.h"

namespace tally::server {

std::optional<std::string> ServerContext::resolve_model(const std::string& requested) const {
  const auto& names = config.served_model_names;
  if (requested.empty()) return names.front();
  for (const auto& name : names) {
    if (name == requested) return name;
  }
  return std::nullopt;
}

std::string ServerContext::rate_client(HttpExchange& exchange) {
  if (!exchange.log().key_id.empty()) return exchange.log().key_id;
  const std::string& remote = exchange.request().remote;
  return remote.substr(0, remote.rfind(':'));  // the address, whatever the port
}

void reply_error(HttpExchange& exchange, const ApiError& error) {
  exchange.log().error = error.message;
  HttpResponse response = api_error_response(error);
  if (error.status == 401) response.headers.emplace_back("WWW-Authenticate", "Bearer");
  exchange.respond(std::move(response));
}

void reply_json(HttpExchange& exchange, int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  exchange.respond(std::move(response));
}

void log_ignored_fields(HttpExchange& exchange, const std::vector<std::string>& ignored) {
  if (ignored.empty()) return;
  // Field names come from the client: escaped, so no newline or control byte reaches the log.
  std::string list;
  for (const auto& name : ignored) list += (list.empty() ? "" : ", ") + quote_client_text(name);
  spdlog::warn("serve: {} {}: ignored request fields: {}",
               exchange.log().request_id,  // checked by request_id_acceptable()
               quote_client_text(exchange.request().path, 256), list);
}

}  // namespace tally::server
