// libFuzzer target: the HTTP/1.1 session (src/server/http_session.cpp) on raw bytes from a
// real loopback connection. The input is sent, the client half-closes, and everything the
// server writes back is read until it closes: it must parse as a sequence of HTTP responses
// (interim 1xx allowed), with at most one final response per request the input could hold,
// and the server must close the connection by itself (no hang; -timeout catches one).
//
// The handler answers at once, later (posted), or as a stream, by the path's first letter, so
// every way an exchange ends is reached.
//
// The client's blocking calls are retried on EINTR: libFuzzer's -timeout watchdog is a
// SIGALRM every second, which interrupts a read in progress (beast's parser keeps its state
// across the retry). The client resets the connection when done, so thousands of exchanges a
// second do not use up loopback's ephemeral ports in TIME_WAIT.
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "server/http_server.h"

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tally::server::HttpExchange;

void require(bool cond) {
  if (!cond) __builtin_trap();
}

[[noreturn]] void fail_with(const char* what, const boost::system::error_code& ec) {
  std::fprintf(stderr, "http_fuzz: %s failed: %s\n", what, ec.message().c_str());
  __builtin_trap();
}

void handle(asio::io_context& io, const std::shared_ptr<HttpExchange>& exchange) {
  const std::string& path = exchange->request().path;
  tally::server::HttpResponse response;
  response.status = 200;
  response.body = "{\"bytes\":" + std::to_string(exchange->request().body.size()) + "}";
  const char kind = path.size() > 1 ? path[1] : '-';
  if (kind == 's') {
    exchange->stream_begin(200, "text/event-stream");
    exchange->stream_write("data: 1\n\n");
    asio::post(io, [exchange] {
      exchange->stream_write("data: [DONE]\n\n");
      exchange->stream_end();
    });
  } else if (kind == 'd') {
    asio::post(io, [exchange, response] { exchange->respond(response); });
  } else {
    exchange->respond(std::move(response));
  }
}

// The server, started once per fuzzing process on its own I/O thread.
struct LoopbackServer {
  asio::io_context io;
  std::unique_ptr<tally::server::HttpServer> server;
  uint16_t port = 0;
  std::thread thread;

  LoopbackServer() {
    tally::server::HttpServerLimits limits;
    limits.max_body_bytes = 64 << 10;
    limits.max_header_bytes = 8 << 10;
    limits.header_timeout = limits.read_timeout = limits.write_timeout = 2;
    limits.idle_timeout = 2;
    server = std::make_unique<tally::server::HttpServer>(
        io, limits, [this](std::shared_ptr<HttpExchange> e) { handle(io, e); });
    auto bound = server->listen("127.0.0.1", 0);
    require(bound.ok());
    port = *bound;
    thread = std::thread([this] { io.run(); });
    thread.detach();  // lives as long as the fuzzing process
  }
};

size_t count(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static LoopbackServer* server = new LoopbackServer();  // never destroyed: its thread runs on
  asio::io_context client_io;
  asio::ip::tcp::socket socket(client_io);
  boost::system::error_code ec;
  do {
    socket.close(ec);
    socket.connect({asio::ip::make_address("127.0.0.1"), server->port}, ec);
  } while (ec == asio::error::interrupted);
  if (ec) fail_with("connect", ec);
  socket.set_option(asio::socket_base::linger(true, 0), ec);
  size_t sent = 0;  // the server may refuse and close early: a write error ends the sending
  while (sent < size) {
    sent += socket.write_some(asio::buffer(data + sent, size - sent), ec);
    if (ec && ec != asio::error::interrupted) break;
  }
  socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);

  boost::beast::flat_buffer buffer;
  size_t finals = 0;
  for (;;) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    do {
      http::read(socket, buffer, parser, ec);
    } while (ec == asio::error::interrupted);
    if (ec) break;
    const unsigned status = parser.get().result_int();
    require(status >= 100 && status < 600);
    if (status >= 200) ++finals;
  }
  // A clean end between responses, or a reset after the server gave up on unread input.
  if (ec != http::error::end_of_stream && ec != asio::error::connection_reset &&
      ec != asio::error::eof) {
    fail_with("reading the responses", ec);
  }
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  require(finals <= 1 + count(input, "\r\n\r\n") + count(input, "\n\n"));
  return 0;
}
