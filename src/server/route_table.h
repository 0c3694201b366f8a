// Method + path -> handler, with authentication in front: every route needs the API key
// (when keys are configured) except /health, /ready and /metrics when --open-health /
// --open-metrics leave them open. Unknown paths answer 404, known paths with another method
// 405 (with Allow), a missing or wrong key 401 — all in OpenAI's error shape.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/auth.h"
#include "server/http_types.h"

namespace tally::server {

enum class RouteAccess {
  kKey,      // needs the API key
  kHealth,   // open with --open-health
  kMetrics,  // open with --open-metrics
};

class RouteTable {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpExchange>)>;

  RouteTable(const ApiKeys& keys, bool open_health, bool open_metrics);

  // `prefix`: the route also takes every path below `path` + "/".
  void add(std::string method, std::string path, RouteAccess access, Handler handler,
           bool prefix = false);
  void handle(std::shared_ptr<HttpExchange> exchange) const;
  // From the header alone (HttpServer's head check): the 401 of a request to a route that
  // needs a key it does not carry (unknown routes go the usual way).
  struct HeadVerdict {
    std::optional<ApiError> error;
    std::string key_id;      // the valid key's id, when the route needs one
    bool api_route = false;  // a kKey route: rate limited
  };
  HeadVerdict check_head(const HttpRequest& head) const;

 private:
  struct Route {
    std::string method;
    std::string path;
    RouteAccess access;
    Handler handler;
    bool prefix;
  };
  bool matches(const Route& route, const std::string& path) const;
  const Route* find(const HttpRequest& request, std::string& allowed) const;
  static ApiError missing_key_error();
  bool needs_key(RouteAccess access) const;

  const ApiKeys& keys_;
  bool open_health_;
  bool open_metrics_;
  std::vector<Route> routes_;
};

}  // namespace tally::server
