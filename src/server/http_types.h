// What the HTTP layer hands to the handlers and takes back: plain structs, so that nothing
// above http_server.cpp includes Beast. One HttpExchange per request; the session implements
// it. Every method runs on the I/O thread (the server has one), so handlers need no locks;
// code on other threads (engine callbacks) must asio::post onto that thread first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tally::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // target without the query
  HttpHeaders headers;
  std::string body;
  std::string remote;  // peer address, "ip:port"

  // First header of that name (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HttpHeaders headers;  // extra headers (X-Request-Id is added by the router)
  std::string body;
};

// What the access log records of one exchange; handlers fill in what they know.
struct ExchangeLog {
  std::string request_id;
  std::string key_id;  // which API key (a short hash, never the key), "" without auth
  std::string model;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t spec_draft_tokens = 0;     // speculation: draft tokens proposed, and accepted
  int32_t spec_accepted_tokens = 0;
  std::string error;  // the message of an error response
};

// One request and the means to answer it. Exactly one of respond() or the stream_*()
// sequence is used per exchange. Calls after the client has gone are ignored.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual const HttpRequest& request() const = 0;
  virtual ExchangeLog& log() = 0;
  // Headers that every answer to this exchange carries (X-Request-Id); set before answering.
  virtual void add_response_header(std::string name, std::string value) = 0;

  // A whole response.
  virtual void respond(HttpResponse response) = 0;
  // A streamed response (chunked transfer encoding): the status line and headers, then any
  // number of body pieces, then the end. Pieces are queued and written in order.
  virtual void stream_begin(int status, std::string content_type) = 0;
  virtual void stream_write(std::string piece) = 0;
  virtual void stream_end() = 0;

  // False once the client has closed the connection or a write failed.
  virtual bool connected() const = 0;
  // Called once when the client goes away before the response is complete (the handler
  // aborts its work there). Replaces any earlier callback.
  virtual void on_disconnect(std::function<void()> callback) = 0;
};

using HttpHandler = std::function<void(std::shared_ptr<HttpExchange>)>;

// One finished exchange, for the access log: answered, refused by the HTTP layer (then
// `request` holds what was parsed before the error) or cut short by the client.
struct ExchangeSummary {
  const HttpRequest& request;
  const ExchangeLog& log;
  int status = 0;
  uint64_t bytes_sent = 0;
  double seconds = 0;        // request complete -> response complete
  bool client_gone = false;  // the client left (or a write failed) before the end
};
using ExchangeDoneCallback = std::function<void(const ExchangeSummary&)>;

}  // namespace tally::server
