#include "server/http_server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <vector>

#include "server/http_session.h"

namespace tally::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

void accept_next(const std::shared_ptr<HttpServer::Impl>& impl) {
  if (!impl->acceptor || !impl->acceptor->is_open()) return;
  impl->acceptor->async_accept([impl](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !impl->acceptor || !impl->acceptor->is_open()) {
      return;
    }
    if (ec) {
      // EMFILE and friends: the peer is dropped; try again shortly rather than spin.
      spdlog::warn("serve: accept failed: {}", ec.message());
      auto timer = std::make_shared<asio::steady_timer>(impl->io, std::chrono::milliseconds(50));
      timer->async_wait([impl, timer](boost::system::error_code) { accept_next(impl); });
      return;
    }
    auto session = std::make_shared<HttpSession>(std::move(socket), impl);
    if (impl->sessions.size() >= impl->limits.max_connections) {
      session->start_refused();  // counted until it closes: a flood cannot grow past the cap
    } else {
      session->start();
    }
    accept_next(impl);
  });
}

template <typename Fn>
void for_each_session(HttpServer::Impl& impl, Fn fn) {
  std::vector<std::shared_ptr<HttpSession>> live;
  for (auto& [ptr, weak] : impl.sessions) {
    if (auto session = weak.lock()) live.push_back(std::move(session));
  }
  for (auto& session : live) fn(*session);
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, HttpServerLimits limits, HttpHandler handler,
                       ExchangeDoneCallback on_done)
    : impl_(std::make_shared<Impl>(io, limits, std::move(handler), std::move(on_done))) {}

HttpServer::~HttpServer() { stop_accepting(); }

namespace {

size_t max_connections_from_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  const auto files = static_cast<size_t>(limit.rlim_cur);
  return files > 2 * HttpServerLimits::kReservedFiles ? files - HttpServerLimits::kReservedFiles
                                                       : HttpServerLimits::kReservedFiles;
}

}  // namespace

Result<uint16_t> HttpServer::listen(const std::string& host, uint16_t port) {
  if (impl_->limits.max_connections == 0) {
    impl_->limits.max_connections = max_connections_from_file_limit();
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "--host '{}' is not an IP address: {}", host,
                      ec.message());
  }
  const tcp::endpoint endpoint(address, port);
  auto& acceptor = impl_->acceptor.emplace(impl_->io);
  if (acceptor.open(endpoint.protocol(), ec); !ec) {
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(endpoint, ec);
  }
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    impl_->acceptor.reset();
    return make_error(ErrorCode::kIo, "cannot listen on {}:{}: {}", host, port, ec.message());
  }
  const uint16_t bound = acceptor.local_endpoint().port();
  accept_next(impl_);
  return bound;
}

void HttpServer::stop_accepting() {
  if (!impl_->acceptor) return;
  boost::system::error_code ec;
  impl_->acceptor->close(ec);
}

void HttpServer::set_head_check(HeadCheck check) { impl_->head_check = std::move(check); }

void HttpServer::set_draining() { impl_->draining = true; }

void HttpServer::close_idle_connections() {
  for_each_session(*impl_, [](HttpSession& s) {
    if (s.idle()) s.close();
  });
}

void HttpServer::close_all_connections() {
  for_each_session(*impl_, [](HttpSession& s) { s.close(); });
}

size_t HttpServer::connection_count() const { return impl_->sessions.size(); }

size_t HttpServer::busy_exchange_count() const { return impl_->busy; }

}  // namespace tally::server
