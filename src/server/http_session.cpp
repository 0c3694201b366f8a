#include "server/http_session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>

#include "server/api_error.h"
#include "server/request_id.h"

namespace tally::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

// The HttpExchange of one request. It keeps its session alive while a handler holds it;
// once answered (or the client left) every further call is ignored.
class SessionExchange final : public HttpExchange {
 public:
  SessionExchange(std::shared_ptr<HttpSession> session, HttpRequest request)
      : session_(std::move(session)), request_(std::move(request)), start_(Clock::now()) {}

  const HttpRequest& request() const override { return request_; }
  ExchangeLog& log() override { return log_; }
  void add_response_header(std::string name, std::string value) override {
    extra_headers_.emplace_back(std::move(name), std::move(value));
  }

  void respond(HttpResponse response) override {
    if (answered_ || gone_) return;
    answered_ = true;
    session_->send_response(std::move(response));
  }
  void stream_begin(int status, std::string content_type) override {
    if (answered_ || gone_) return;
    answered_ = true;
    streaming_ = true;
    session_->send_stream_head(status, content_type);
  }
  void stream_write(std::string piece) override {
    if (!streaming_ || stream_ended_ || gone_ || piece.empty()) return;
    session_->send_stream_piece(piece);
  }
  void stream_end() override {
    if (!streaming_ || stream_ended_ || gone_) return;
    stream_ended_ = true;
    session_->send_stream_end();
  }
  bool connected() const override { return !gone_; }
  void on_disconnect(std::function<void()> callback) override {
    on_disconnect_ = std::move(callback);
  }

  // The session's side.
  void client_gone() {
    if (gone_) return;
    gone_ = true;
    if (auto callback = std::move(on_disconnect_)) callback();
  }
  void release_session() { session_.reset(); }  // breaks the session <-> exchange cycle
  const HttpHeaders& extra_headers() const { return extra_headers_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  std::shared_ptr<HttpSession> session_;
  HttpRequest request_;
  ExchangeLog log_;
  HttpHeaders extra_headers_;
  Clock::time_point start_;
  std::function<void()> on_disconnect_;
  bool answered_ = false;
  bool streaming_ = false;
  bool stream_ended_ = false;
  bool gone_ = false;
};

namespace {

std::string remote_of(const asio::ip::tcp::socket& socket) {
  beast::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "?";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

bool is_hangup(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == http::error::partial_message;
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, std::shared_ptr<HttpServer::Impl> server)
    : socket_(std::move(socket)),
      server_(std::move(server)),
      read_deadline_(server_->io),
      write_deadline_(server_->io) {
  remote_ = remote_of(socket_);
}

HttpSession::~HttpSession() { server_->sessions.erase(this); }

void HttpSession::start() {
  server_->sessions.emplace(this, weak_from_this());
  beast::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);  // SSE pieces are small
  read_next();
}

void HttpSession::start_refused() {
  server_->sessions.emplace(this, weak_from_this());
  refuse(ApiError::with_status(
      503, fmt::format("too many connections (the server's limit is {}); try again later",
                       server_->limits.max_connections)));
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  state_ = State::kClosed;
  beast::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  read_deadline_.cancel();
  write_deadline_.cancel();
  if (exchange_) end_exchange(/*client_gone=*/true);
}

void HttpSession::arm_read_deadline(double seconds, State expected) {
  read_timed_out_ = false;
  read_deadline_.expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
  read_deadline_.async_wait([self = shared_from_this(), expected](beast::error_code ec) {
    if (ec || self->closed_ || self->state_ != expected) return;
    if (expected == State::kIdle) {
      self->close();  // an idle keep-alive connection: nothing to answer
      return;
    }
    self->read_timed_out_ = true;
    beast::error_code ignored;
    self->socket_.cancel(ignored);  // the pending read completes with operation_aborted
  });
}

void HttpSession::read_next() {
  if (closed_) return;
  state_ = State::kIdle;
  // An idle connection keeps only small buffers, whatever its last request needed: thousands
  // of idle keep-alive connections must not each hold a megabyte.
  constexpr size_t kIdleBufferBytes = 16 << 10;
  if (buffer_.size() == 0 && buffer_.capacity() > kIdleBufferBytes) buffer_.shrink_to_fit();
  if (out_inflight_.capacity() > kIdleBufferBytes) std::string().swap(out_inflight_);
  if (out_pending_.empty() && out_pending_.capacity() > kIdleBufferBytes) {
    std::string().swap(out_pending_);
  }
  parser_.emplace();
  parser_->body_limit(server_->limits.max_body_bytes);
  parser_->header_limit(static_cast<uint32_t>(server_->limits.max_header_bytes));
  if (buffer_.size() > 0) {  // a pipelined request is already here
    read_header();
    return;
  }
  arm_read_deadline(server_->limits.idle_timeout, State::kIdle);
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](beast::error_code ec) {
                       if (self->closed_ || self->state_ != State::kIdle) return;
                       if (ec) {
                         self->close();
                         return;
                       }
                       self->read_header();
                     });
}

void HttpSession::read_header() {
  state_ = State::kHeader;
  arm_read_deadline(server_->limits.header_timeout, State::kHeader);
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void HttpSession::on_header(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    on_read_error(ec);
    return;
  }
  if (refused_at_head()) return;
  state_ = State::kBody;
  arm_read_deadline(server_->limits.read_timeout, State::kBody);
  const auto& head = parser_->get();
  auto expect = head.find(http::field::expect);
  if (expect != head.end() && beast::iequals(expect->value(), "100-continue") &&
      !parser_->is_done()) {
    queue_write("HTTP/1.1 100 Continue\r\n\r\n");
  }
  http::async_read(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec2, size_t) { self->on_body(ec2); });
}

void HttpSession::on_body(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    on_read_error(ec);
    return;
  }
  read_deadline_.cancel();
  dispatch();
}

void HttpSession::on_read_error(beast::error_code ec) {
  read_deadline_.cancel();
  if (read_timed_out_) {
    refuse(ApiError::with_status(408, state_ == State::kHeader
                                          ? "timed out reading the request header"
                                          : "timed out reading the request body"));
  } else if (ec == http::error::body_limit) {
    refuse(ApiError::with_status(413, fmt::format("request body larger than the limit of {} bytes",
                                                  server_->limits.max_body_bytes)));
  } else if (ec == http::error::header_limit) {
    refuse(ApiError::with_status(
        431, fmt::format("request header larger than the limit of {} bytes",
                         server_->limits.max_header_bytes)));
  } else if (is_hangup(ec) || ec == asio::error::operation_aborted) {
    close();
  } else {
    refuse(ApiError::with_status(400, "malformed HTTP request: " + ec.message()));
  }
}

HttpRequest HttpSession::request_head() const {
  HttpRequest request;
  if (parser_ && parser_->is_header_done()) {
    const auto& head = parser_->get();
    request.method = std::string(head.method_string());
    request.target = std::string(head.target());
    request.path = request.target.substr(0, request.target.find('?'));
    for (const auto& field : head) {
      request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
  }
  request.remote = remote_;
  return request;
}

// A body still to come is not read for a request the header already condemns. A request
// whose body has arrived with its header goes the usual way (the router checks the same).
bool HttpSession::refused_at_head() {
  if (!server_->head_check || parser_->is_done()) return false;
  auto refusal = server_->head_check(request_head());
  if (!refusal) return false;
  refuse(refusal->error, refusal->key_id);
  return true;
}

// An error answered without a handler; the connection closes after it.
void HttpSession::refuse(const ApiError& error, const std::string& key_id) {
  state_ = State::kHandling;
  keep_alive_ = false;
  refused_request_ = request_head();
  refused_request_.headers.clear();  // the access log takes method and target only
  auto exchange = std::make_shared<SessionExchange>(shared_from_this(), refused_request_);
  exchange->log().request_id = request_id_new();
  exchange->log().error = error.message;
  exchange->log().key_id = key_id;
  exchange->add_response_header("X-Request-Id", exchange->log().request_id);
  exchange_ = exchange;
  ++server_->busy;
  exchange->respond(api_error_response(error));
}

void HttpSession::dispatch() {
  state_ = State::kHandling;
  HttpRequest request = request_head();
  auto message = parser_->release();
  request.body = std::move(message.body());
  keep_alive_ = message.keep_alive();
  chunked_ = message.version() >= 11;

  auto exchange = std::make_shared<SessionExchange>(shared_from_this(), std::move(request));
  const auto client_id = exchange->request().header("X-Request-Id");
  exchange->log().request_id =
      client_id && request_id_acceptable(*client_id) ? std::string(*client_id) : request_id_new();
  exchange->add_response_header("X-Request-Id", exchange->log().request_id);
  exchange_ = exchange;
  ++server_->busy;
  watch_for_hangup();
  if (server_->draining) {
    keep_alive_ = false;
    exchange->respond(api_error_response(ApiError::overloaded("the server is shutting down")));
    return;
  }
  server_->handler(exchange);
}

// While an exchange is handled the client sends nothing (or a pipelined request, kept in
// the buffer). A readable socket with no bytes means the client hung up.
void HttpSession::watch_for_hangup() {
  if (watching_ || closed_) return;
  watching_ = true;
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](beast::error_code ec) { self->on_watch(ec); });
}

void HttpSession::on_watch(beast::error_code ec) {
  watching_ = false;
  if (closed_ || state_ != State::kHandling || !exchange_) return;
  if (ec) {
    if (ec != asio::error::operation_aborted) close();
    return;
  }
  beast::error_code read_ec;
  const size_t available = socket_.available(read_ec);
  if (read_ec) {
    close();  // reset: the client is gone
    return;
  }
  if (available == 0) {
    on_peer_eof();
    return;
  }
  constexpr size_t kMaxPipelined = 64 << 10;
  if (buffer_.size() >= kMaxPipelined) return;  // stop watching; the write path will notice
  const size_t n = socket_.read_some(buffer_.prepare(std::min(available, kMaxPipelined)), read_ec);
  if (read_ec) {
    close();
    return;
  }
  buffer_.commit(n);
  watch_for_hangup();
}

// The client sent FIN. It may be gone, or only done sending (shutdown(SHUT_WR) after a
// complete request) and still reading: TCP shows both the same. So the request goes on and
// the connection closes after its response; a client that is gone answers the next bytes
// sent with a reset, reported as a socket error. When no response bytes have gone out yet,
// an interim "100 Continue" is those bytes (HTTP/1.1 clients must accept 1xx responses
// before the final one); HTTP/1.0 has no interim responses, so there EOF still means gone.
void HttpSession::on_peer_eof() {
  keep_alive_ = false;
  if (!chunked_) {
    close();
    return;
  }
  socket_.async_wait(asio::ip::tcp::socket::wait_error,
                     [self = shared_from_this()](beast::error_code ec) {
                       if (!ec && !self->closed_) self->close();  // reset: the client is gone
                     });
  if (status_ == 0) queue_write("HTTP/1.1 100 Continue\r\n\r\n");
}

std::string HttpSession::response_head(int status, const std::string& content_type,
                                       std::optional<size_t> content_length) const {
  const auto reason = http::obsolete_reason(static_cast<http::status>(status));
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", status,
                                 std::string_view(reason.data(), reason.size()), content_type);
  if (content_length) {
    head += fmt::format("Content-Length: {}\r\n", *content_length);
  } else if (chunked_) {
    head += "Transfer-Encoding: chunked\r\n";
  }
  head += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : exchange_->extra_headers()) {
    head += fmt::format("{}: {}\r\n", name, value);
  }
  return head;
}

void HttpSession::send_response(HttpResponse response) {
  if (closed_ || !exchange_) return;
  if (server_->draining) keep_alive_ = false;
  status_ = response.status;
  std::string bytes = response_head(response.status, response.content_type, response.body.size());
  for (const auto& [name, value] : response.headers)
    bytes += fmt::format("{}: {}\r\n", name, value);
  bytes += "\r\n";
  bytes += response.body;
  final_queued_ = true;
  queue_write(std::move(bytes));
}

void HttpSession::send_stream_head(int status, const std::string& content_type) {
  if (closed_ || !exchange_) return;
  status_ = status;
  if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection does
  std::string bytes = response_head(status, content_type, std::nullopt);
  bytes += "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n\r\n";
  queue_write(std::move(bytes));
}

void HttpSession::send_stream_piece(const std::string& piece) {
  if (closed_ || !exchange_) return;
  if (chunked_) {
    queue_write(fmt::format("{:x}\r\n{}\r\n", piece.size(), piece));
  } else {
    queue_write(piece);
  }
}

void HttpSession::send_stream_end() {
  if (closed_ || !exchange_) return;
  final_queued_ = true;
  queue_write(chunked_ ? "0\r\n\r\n" : "");
}

void HttpSession::queue_write(std::string bytes) {
  out_pending_ += bytes;
  if (!writing_) flush();
}

void HttpSession::flush() {
  if (closed_) return;
  if (out_pending_.empty()) {
    if (final_queued_ && exchange_) on_response_written();
    return;
  }
  writing_ = true;
  out_inflight_.swap(out_pending_);
  out_pending_.clear();
  write_deadline_.expires_after(std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(server_->limits.write_timeout)));
  write_deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec && self->writing_) self->close();  // the client stopped reading
  });
  asio::async_write(
      socket_, asio::buffer(out_inflight_),
      [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_write(ec, n); });
}

void HttpSession::on_write(beast::error_code ec, size_t n) {
  writing_ = false;
  write_deadline_.cancel();
  bytes_sent_ += n;
  out_inflight_.clear();
  if (closed_) return;
  if (ec) {
    close();
    return;
  }
  flush();
}

void HttpSession::on_response_written() {
  end_exchange(/*client_gone=*/false);
  if (!keep_alive_) {
    linger_close();
    return;
  }
  read_next();
}

// Closing a socket with unread input makes the kernel send RST, which can destroy the
// response before the client reads it (a refused upload is still arriving). So: stop
// sending, read and discard until the client closes too, for at most a second.
void HttpSession::linger_close() {
  state_ = State::kClosed;
  beast::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  read_deadline_.expires_after(std::chrono::seconds(1));
  read_deadline_.async_wait([self = shared_from_this()](beast::error_code) { self->close(); });
  discard_input();
}

void HttpSession::discard_input() {
  if (closed_) return;
  auto scratch = std::make_shared<std::array<char, 4096>>();
  socket_.async_read_some(asio::buffer(*scratch),
                          [self = shared_from_this(), scratch](beast::error_code ec, size_t) {
                            if (ec) {
                              self->close();
                              return;
                            }
                            self->discard_input();
                          });
}

void HttpSession::end_exchange(bool client_gone) {
  auto exchange = std::move(exchange_);
  exchange_.reset();
  final_queued_ = false;
  --server_->busy;
  if (client_gone) exchange->client_gone();
  if (server_->on_done) {
    ExchangeSummary summary{exchange->request(), exchange->log(),     status_,
                            bytes_sent_,         exchange->seconds(), client_gone};
    server_->on_done(summary);
  }
  exchange->release_session();
  status_ = 0;
  bytes_sent_ = 0;
}

}  // namespace tally::server
