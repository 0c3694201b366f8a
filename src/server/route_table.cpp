#include "server/route_table.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/server_context.h"

namespace tally::server {

RouteTable::RouteTable(const ApiKeys& keys, bool open_health, bool open_metrics)
    : keys_(keys), open_health_(open_health), open_metrics_(open_metrics) {}

void RouteTable::add(std::string method, std::string path, RouteAccess access, Handler handler,
                 bool prefix) {
  routes_.push_back({std::move(method), std::move(path), access, std::move(handler), prefix});
}

bool RouteTable::matches(const Route& route, const std::string& path) const {
  if (path == route.path) return true;
  return route.prefix && path.size() > route.path.size() + 1 && path.starts_with(route.path) &&
         path[route.path.size()] == '/';
}

bool RouteTable::needs_key(RouteAccess access) const {
  if (!keys_.enabled()) return false;
  if (access == RouteAccess::kHealth) return !open_health_;
  if (access == RouteAccess::kMetrics) return !open_metrics_;
  return true;
}

// The route for the request's method and path; nullptr with `allowed` listing the methods
// the path takes (empty: no such path).
const RouteTable::Route* RouteTable::find(const HttpRequest& request, std::string& allowed) const {
  for (const auto& route : routes_) {
    if (!matches(route, request.path)) continue;
    if (route.method == request.method) return &route;
    allowed += (allowed.empty() ? "" : ", ") + route.method;
  }
  return nullptr;
}

ApiError RouteTable::missing_key_error() {
  return ApiError::unauthorized("missing or invalid API key: send 'Authorization: Bearer <key>'");
}

RouteTable::HeadVerdict RouteTable::check_head(const HttpRequest& head) const {
  HeadVerdict verdict;
  std::string allowed;
  const Route* found = find(head, allowed);
  if (!found) return verdict;
  verdict.api_route = found->access == RouteAccess::kKey;
  if (!needs_key(found->access)) return verdict;
  auto key = keys_.check(head.header("Authorization"));
  if (!key) {
    verdict.error = missing_key_error();
  } else {
    verdict.key_id = *key;
  }
  return verdict;
}

void RouteTable::handle(std::shared_ptr<HttpExchange> exchange) const {
  const HttpRequest& request = exchange->request();
  std::string allowed;
  const Route* found = find(request, allowed);
  if (!found && allowed.empty()) {
    return reply_error(*exchange, ApiError::not_found(fmt::format("no route for {} {}",
                                                                  request.method, request.path)));
  }
  if (!found) {
    exchange->add_response_header("Allow", allowed);
    return reply_error(
        *exchange, ApiError::with_status(405, fmt::format("{} does not take {} (allowed: {})",
                                                          request.path, request.method, allowed)));
  }
  if (needs_key(found->access)) {
    auto key = keys_.check(request.header("Authorization"));
    if (!key) return reply_error(*exchange, missing_key_error());
    exchange->log().key_id = *key;
  }
  found->handler(std::move(exchange));
}

}  // namespace tally::server
