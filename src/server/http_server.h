// The HTTP/1.1 front: accepts connections on one io_context (run by one thread) and drives
// each as an asynchronous session: no thread per connection, so thousands of idle keep-alive
// or streaming connections cost only their buffers. A session reads one request at a time
// (header, then body, each under its own deadline), hands it to the handler as an
// HttpExchange, writes the answer, and reads the next request if keep-alive allows.
//
// Limits answered here, before any handler runs: a header over max_header_bytes (431), a body
// over max_body_bytes (413), a malformed request (400), a client too slow to send its header
// or body (408, then the connection closes). Between requests a connection may stay idle for
// idle_timeout; a write that makes no progress for write_timeout closes it. Past
// max_connections open connections a new one is answered 503 and closed.
//
// Thread rules: construct, listen and stop on any thread before/after io.run(); everything
// else (and every HttpExchange call) on the io_context's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "server/api_error.h"
#include "server/http_types.h"

namespace boost::asio {
class io_context;
}

namespace tally::server {

struct HttpServerLimits {
  size_t max_body_bytes = 4 << 20;
  size_t max_header_bytes = 16 << 10;
  double header_timeout = 10;  // seconds: first byte of a request -> end of its header
  double read_timeout = 30;    // seconds: end of the header -> end of the body
  double idle_timeout = 120;   // seconds a keep-alive connection may wait for a request
  double write_timeout = 60;   // seconds a pending write may make no progress
  // Open connections at most; one more is answered 503 and closed. 0: the open-file limit
  // (RLIMIT_NOFILE when listen() runs) less kReservedFiles, for the model, logs and the like.
  size_t max_connections = 0;
  static constexpr size_t kReservedFiles = 64;
};

// A refusal decided from a request's header alone (see HttpServer::set_head_check).
struct HeadRefusal {
  ApiError error;
  std::string key_id;  // for the access log, when the key was valid (a rate limit)
};
using HeadCheck = std::function<std::optional<HeadRefusal>(const HttpRequest& head)>;

class HttpServer {
 public:
  // `on_done` (may be empty) is told of every exchange when it ends.
  HttpServer(boost::asio::io_context& io, HttpServerLimits limits, HttpHandler handler,
             ExchangeDoneCallback on_done = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Run when a request's header has arrived and its body has not (body is empty in `head`):
  // a refusal is answered at once and the connection closes without the body being read, so
  // a client with a bad key or over its rate limit costs only its header, not 4 MiB.
  void set_head_check(HeadCheck check);

  // Binds and starts accepting. Port 0 picks a free port; returns the bound port.
  Result<uint16_t> listen(const std::string& host, uint16_t port);
  // Closes the listening socket; open connections continue.
  void stop_accepting();
  // Answers requests that arrive from now on with 503 and closes their connection
  // (used while draining for shutdown).
  void set_draining();
  // Closes every connection that is not in the middle of an exchange.
  void close_idle_connections();
  // Closes every connection (the end of a drain).
  void close_all_connections();

  size_t connection_count() const;
  size_t busy_exchange_count() const;  // exchanges handed to the handler and not yet answered

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tally::server
