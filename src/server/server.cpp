#include "server/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <sys/resource.h>

#include <latch>

#include <algorithm>
#include <chrono>
#include <csignal>

#include "base/thread_name.h"
#include "base/unix_time.h"
#include "server/access_log.h"
#include "server/auth.h"
#include "server/generation_job.h"
#include "server/handlers.h"
#include "server/http_server.h"
#include "server/route_table.h"

namespace tally::server {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

void add_routes(RouteTable& routes, ServerContext& ctx) {
  auto bind = [&ctx](void (*fn)(ServerContext&, std::shared_ptr<HttpExchange>)) {
    return [&ctx, fn](std::shared_ptr<HttpExchange> ex) { fn(ctx, std::move(ex)); };
  };
  routes.add("POST", "/v1/completions", RouteAccess::kKey, bind(handle_completions));
  routes.add("POST", "/v1/chat/completions", RouteAccess::kKey, bind(handle_chat_completions));
  routes.add("GET", "/v1/models", RouteAccess::kKey, bind(handle_models), /*prefix=*/true);
  routes.add("POST", "/tokenize", RouteAccess::kKey, bind(handle_tokenize));
  routes.add("POST", "/detokenize", RouteAccess::kKey, bind(handle_detokenize));
  routes.add("GET", "/health", RouteAccess::kHealth, bind(handle_health));
  routes.add("GET", "/ready", RouteAccess::kHealth, bind(handle_ready));
  routes.add("GET", "/metrics", RouteAccess::kMetrics, bind(handle_metrics));
}

// Names each of the pool's n threads: n tasks that each wait until all n have started must
// run on n different threads.
void name_pool_threads(asio::thread_pool& pool, int n, const std::string& prefix) {
  auto all_started = std::make_shared<std::latch>(n);
  for (int i = 0; i < n; ++i) {
    asio::post(pool, [all_started, name = prefix + std::to_string(i)] {
      name_this_thread(name);
      all_started->arrive_and_wait();
    });
  }
}

}  // namespace

// The io_context is declared first so it is destroyed last, after everything that holds
// sockets or timers on it (sessions are kept alive by the jobs in ctx).
struct Server::Impl {
  Impl(ServerConfig cfg, Engine& eng, std::unique_ptr<ChatRenderer> renderer,
       ServerObserver* observer)
      : config(std::move(cfg)),
        engine(eng),
        chat(std::move(renderer)),
        keys(config.api_keys),
        limiter(config.rate_limits),
        prompt_workers(static_cast<size_t>(std::max(1, config.prompt_workers))),
        ctx{io,      prompt_workers, config,  engine, engine.tokenizer(), *chat, observer,
            limiter, unix_seconds_now(), false, 0, {}},
        routes(keys, config.open_health, config.open_metrics),
        http(
            io, config.http,
            [this](std::shared_ptr<HttpExchange> ex) { routes.handle(std::move(ex)); },
            [this](const ExchangeSummary& s) { access_log.write(s); }),
        signals(io, SIGINT, SIGTERM),
        drain_timer(io) {
    add_routes(routes, ctx);
    name_pool_threads(prompt_workers, std::max(1, config.prompt_workers), "tally-prompt-");
    http.set_head_check([this](const HttpRequest& head) { return check_head(head); });
  }
  // A server that never ran (e.g. listen() failed) still has its naming tasks queued: join
  // lets every worker take one before the pool's own destructor stops it. Stopping first
  // would let a worker exit without its task while another waits on the latch for ever.
  // (join after join is a no-op.)
  ~Impl() { prompt_workers.join(); }

  std::optional<HeadRefusal> check_head(const HttpRequest& head);
  void begin_drain();
  void poll_drain();
  void wait_for_signal();

  asio::io_context io;
  ServerConfig config;
  Engine& engine;
  std::unique_ptr<ChatRenderer> chat;
  ApiKeys keys;
  RateLimiter limiter;
  AccessLog access_log;
  asio::thread_pool prompt_workers;  // destroyed (joined) before what its work reads
  ServerContext ctx;
  RouteTable routes;
  HttpServer http;
  asio::signal_set signals;
  asio::steady_timer drain_timer;
  Clock::time_point drain_deadline;
  bool aborted = false;
};

// Authentication and the request rate limit, from the header: a refused client's body is
// never read.
std::optional<HeadRefusal> Server::Impl::check_head(const HttpRequest& head) {
  auto verdict = routes.check_head(head);
  if (verdict.error) return HeadRefusal{std::move(*verdict.error), {}};
  if (!verdict.api_route) return std::nullopt;
  const auto decision = limiter.peek(ServerContext::rate_client(verdict.key_id, head.remote));
  if (decision.allowed) return std::nullopt;
  return HeadRefusal{rate_limit_error(decision), verdict.key_id};
}

void Server::Impl::wait_for_signal() {
  signals.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (ctx.draining) {
      spdlog::warn("serve: signal {} again: not waiting for running requests", signal);
      drain_deadline = Clock::now();
    } else {
      spdlog::warn("serve: signal {}: draining (up to {} s)", signal, config.drain_timeout);
      begin_drain();
    }
    wait_for_signal();
  });
}

void Server::Impl::begin_drain() {
  if (ctx.draining) return;
  ctx.draining = true;
  http.stop_accepting();
  http.set_draining();
  http.close_idle_connections();
  drain_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(config.drain_timeout));
  poll_drain();
}

// Every 20 ms: done when no exchange is open; past the deadline, abort the running jobs
// once (their aborted ends still reach the clients), and give up 2 s later.
void Server::Impl::poll_drain() {
  const auto now = Clock::now();
  if (http.busy_exchange_count() == 0 || now > drain_deadline + std::chrono::seconds(2)) {
    http.close_all_connections();
    signals.cancel();
    io.stop();
    return;
  }
  if (now >= drain_deadline && !aborted) {
    aborted = true;
    spdlog::warn("serve: drain timeout: aborting {} running requests", ctx.jobs.size());
    std::vector<std::shared_ptr<GenerationJob>> jobs;
    for (auto& [ptr, job] : ctx.jobs) jobs.push_back(job);
    for (auto& job : jobs) job->abort();
  }
  drain_timer.expires_after(std::chrono::milliseconds(20));
  drain_timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) poll_drain();
  });
}

Server::Server(ServerConfig config, Engine& engine, std::unique_ptr<ChatRenderer> chat,
               ServerObserver* observer)
    : impl_(std::make_unique<Impl>(std::move(config), engine, std::move(chat), observer)) {}

Server::~Server() = default;

namespace {

// Each connection is a file descriptor: take the hard limit rather than the usual soft 1024,
// so thousands of clients can be connected at once.
void raise_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    spdlog::info("serve: open-file limit raised from {} to {}", before, limit.rlim_cur);
  }
}

}  // namespace

Result<uint16_t> Server::listen() {
  raise_file_limit();
  auto log = AccessLog::open(impl_->config.access_log);
  if (!log.ok()) return log.status();
  impl_->access_log = std::move(*log);
  return impl_->http.listen(impl_->config.host, impl_->config.port);
}

void Server::run() {
  impl_->wait_for_signal();
  impl_->io.run();
  // The I/O loop is over: let the prompt workers finish (their results go nowhere), then stop
  // the engine before anything its callbacks reference goes.
  impl_->prompt_workers.join();
  impl_->engine.shutdown(0);
  impl_->ctx.jobs.clear();
}

void Server::stop() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_drain(); });
}

}  // namespace tally::server
