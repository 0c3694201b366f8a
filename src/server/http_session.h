// One client connection of the HttpServer (internal to http_server*.cpp and http_session.cpp).
// A session is a small state machine driven by Asio completions on the I/O thread:
//   idle -> header -> body -> handling (the exchange) -> idle ... -> closed
// Bytes to send go through one queue with at most one write in flight, so streamed pieces
// keep their order and no lock is needed. While an exchange is being handled the session
// watches the socket, so a client that hangs up is noticed at once (its request is aborted).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/http_server.h"

namespace tally::server {

class HttpSession;
class SessionExchange;

struct HttpServer::Impl {
  Impl(boost::asio::io_context& io_context, HttpServerLimits l, HttpHandler h,
       ExchangeDoneCallback done)
      : io(io_context), limits(l), handler(std::move(h)), on_done(std::move(done)) {}

  boost::asio::io_context& io;
  HttpServerLimits limits;
  HttpHandler handler;
  ExchangeDoneCallback on_done;
  HeadCheck head_check;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions;
  size_t busy = 0;
  bool draining = false;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServer::Impl> server);
  ~HttpSession();

  void start();
  // Over the connection cap: answers 503 at once and closes (after the usual linger).
  void start_refused();
  void close();  // at once; an exchange in progress counts as a disconnect
  bool idle() const { return state_ == State::kIdle && !closed_; }

  // The exchange's side (SessionExchange calls these).
  void send_response(HttpResponse response);
  void send_stream_head(int status, const std::string& content_type);
  void send_stream_piece(const std::string& piece);
  void send_stream_end();

 private:
  enum class State { kIdle, kHeader, kBody, kHandling, kClosed };

  void read_next();
  void read_header();
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void on_read_error(boost::beast::error_code ec);
  void dispatch();
  bool refused_at_head();  // the head check refused the request (answered, closing)
  HttpRequest request_head() const;  // what the parser has, without the body
  void refuse(const ApiError& error, const std::string& key_id = {});  // answer, then close

  void watch_for_hangup();
  void on_watch(boost::beast::error_code ec);
  void on_peer_eof();

  void queue_write(std::string bytes);
  void flush();
  void on_write(boost::beast::error_code ec, size_t n);
  void on_response_written();
  void linger_close();
  void discard_input();
  void end_exchange(bool client_gone);

  void arm_read_deadline(double seconds, State expected);
  std::string response_head(int status, const std::string& content_type,
                            std::optional<size_t> content_length) const;

  boost::asio::ip::tcp::socket socket_;
  std::shared_ptr<HttpServer::Impl> server_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer read_deadline_;
  boost::asio::steady_timer write_deadline_;
  State state_ = State::kIdle;
  bool closed_ = false;
  bool read_timed_out_ = false;
  bool watching_ = false;

  std::string remote_;
  std::shared_ptr<SessionExchange> exchange_;  // the exchange being handled, if any
  HttpRequest refused_request_;                // what was parsed of a refused request
  bool keep_alive_ = true;
  bool chunked_ = true;        // HTTP/1.1 client: streamed bodies use chunked encoding
  bool final_queued_ = false;  // the last bytes of the response are queued
  int status_ = 0;             // of the response being written
  uint64_t bytes_sent_ = 0;    // of the response being written

  std::string out_pending_;   // queued, not yet handed to the socket
  std::string out_inflight_;  // being written
  bool writing_ = false;
};

}  // namespace tally::server
