#include "server/server_context.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cmath>

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
  return rate_client(exchange.log().key_id, exchange.request().remote);
}

std::string ServerContext::rate_client(const std::string& key_id, const std::string& remote) {
  if (!key_id.empty()) return key_id;
  return remote.substr(0, remote.rfind(':'));  // the address, whatever the port
}

void run_off_io_thread(ServerContext& ctx, std::function<void()> work, std::function<void()> then) {
  boost::asio::post(ctx.prompt_workers,
                    [&io = ctx.io, work = std::move(work), then = std::move(then)]() mutable {
                      work();
                      boost::asio::post(io, std::move(then));
                    });
}

ApiError rate_limit_error(const RateLimiter::Decision& decision) {
  ApiError error =
      ApiError::rate_limited(fmt::format("rate limit of {} per minute reached; retry in {:.1f} s",
                                         decision.what, decision.retry_after));
  error.retry_after = std::max(1, static_cast<int>(std::ceil(decision.retry_after)));
  return error;
}

void reply_error(HttpExchange& exchange, const ApiError& error) {
  exchange.log().error = error.message;
  exchange.respond(api_error_response(error));
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
