#include "loadgen/http_client.h"

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <limits>

namespace tally::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpClient::Impl {
  asio::io_context io;
  tcp::resolver::results_type endpoints;
  bool resolved = false;
};

namespace {

// One exchange on its own connection (Connection: close), kept alive by its own handlers.
class StreamOp : public std::enable_shared_from_this<StreamOp> {
 public:
  StreamOp(asio::io_context& io, http::request<http::string_body> req, HttpStreamHandlers h)
      : stream_(io), req_(std::move(req)), handlers_(std::move(h)) {
    // A stream is as long as the server makes it. (Not boost::none: Boost 1.74 compares a
    // Content-Length against an empty optional as "over the limit".)
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());
  }

  void start(const tcp::resolver::results_type& endpoints, double timeout_s) {
    stream_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    stream_.async_connect(
        endpoints, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return self->finish("connect: " + ec.message());
          http::async_write(self->stream_, self->req_,
                            [self](beast::error_code ec2, size_t) { self->on_written(ec2); });
        });
  }

 private:
  void on_written(beast::error_code ec) {
    if (ec) return finish("write: " + ec.message());
    http::async_read_header(stream_, buffer_, parser_,
                            [self = shared_from_this()](beast::error_code ec2, size_t) {
                              if (ec2) return self->finish("reading the header: " + ec2.message());
                              if (self->handlers_.on_status) {
                                self->handlers_.on_status(self->parser_.get().result_int());
                              }
                              self->read_body();
                            });
  }

  // Body bytes are read from the socket here (not through http::async_read) so that each
  // piece is stamped with the time its bytes arrived, not the time the parser got to it.
  void read_body() { parse_buffered(Clock::now()); }

  void parse_buffered(Clock::time_point at) {
    for (;;) {
      if (parser_.is_done()) return finish("");
      auto& body = parser_.get().body();
      body.data = chunk_.data();
      body.size = chunk_.size();
      body.more = true;
      beast::error_code ec;
      const size_t used = parser_.put(buffer_.data(), ec);
      buffer_.consume(used);
      const size_t got = chunk_.size() - body.size;
      if (got > 0 && handlers_.on_body) handlers_.on_body(std::string_view(chunk_.data(), got), at);
      if (ec == http::error::need_more || (!ec && used == 0 && got == 0)) break;
      if (ec && ec != http::error::need_buffer)
        return finish("malformed HTTP body: " + ec.message());
    }
    read_more();
  }

  void read_more() {
    stream_.async_read_some(buffer_.prepare(kReadBytes),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              const auto at = Clock::now();
                              self->buffer_.commit(n);
                              if (ec == asio::error::eof) return self->on_eof();
                              if (ec) return self->finish("reading the body: " + ec.message());
                              self->parse_buffered(at);
                            });
  }

  void on_eof() {
    beast::error_code ec;
    parser_.put_eof(ec);  // ends a body delimited by the connection's close
    finish(!ec && parser_.is_done() ? "" : "the server closed the connection mid-response");
  }

  void finish(const std::string& error) {
    if (finished_) return;
    finished_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (handlers_.on_end) handlers_.on_end(error);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response_parser<http::buffer_body> parser_;
  HttpStreamHandlers handlers_;
  static constexpr size_t kReadBytes = 16 << 10;
  std::array<char, 16 << 10> chunk_{};
  bool finished_ = false;
};

http::request<http::string_body> make_request(const BaseUrl& url, const HttpRequestSpec& spec) {
  http::request<http::string_body> req;
  req.method_string(spec.method);
  req.target(url.path_prefix + spec.path);
  req.version(11);
  req.set(http::field::host, url.host_header);
  req.set(http::field::user_agent, "tally-bench-serve");
  req.set(http::field::accept, "*/*");
  if (!spec.api_key.empty()) req.set(http::field::authorization, "Bearer " + spec.api_key);
  if (!spec.body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = spec.body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  return req;
}

}  // namespace

HttpClient::HttpClient(BaseUrl url) : url_(std::move(url)), impl_(std::make_unique<Impl>()) {}
HttpClient::~HttpClient() = default;

Status HttpClient::resolve() {
  if (impl_->resolved) return Status::ok_status();
  tcp::resolver resolver(impl_->io);
  beast::error_code ec;
  impl_->endpoints = resolver.resolve(url_.host, std::to_string(url_.port), ec);
  if (ec || impl_->endpoints.empty()) {
    return make_error(ErrorCode::kNotFound, "cannot resolve host '{}' of {}: {}", url_.host,
                      url_.text(), ec ? ec.message() : "no address");
  }
  impl_->resolved = true;
  return Status::ok_status();
}

void HttpClient::start(const HttpRequestSpec& spec, HttpStreamHandlers handlers,
                       Clock::time_point* sent) {
  auto op = std::make_shared<StreamOp>(impl_->io, make_request(url_, spec), std::move(handlers));
  if (sent) *sent = Clock::now();
  op->start(impl_->endpoints, spec.timeout_s);
}

void HttpClient::call_at(Clock::time_point at, std::function<void()> fn) {
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, at);
  timer->async_wait([timer, fn = std::move(fn)](beast::error_code) { fn(); });
}

void HttpClient::run() {
  impl_->io.restart();
  impl_->io.run();
}

Result<HttpResult> HttpClient::fetch(const HttpRequestSpec& spec) {
  TALLY_RETURN_IF_ERROR(resolve());
  HttpResult result;
  std::string error;
  HttpStreamHandlers h;
  h.on_status = [&result](int status) { result.status = status; };
  h.on_body = [&result](std::string_view bytes, Clock::time_point) { result.body.append(bytes); };
  h.on_end = [&error](const std::string& e) { error = e; };
  start(spec, std::move(h), nullptr);
  run();
  if (!error.empty()) {
    return make_error(ErrorCode::kIo, "{} {}{}: {}", spec.method, url_.text(), spec.path, error);
  }
  return result;
}

}  // namespace tally::loadgen
