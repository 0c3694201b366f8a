// What the handlers share: the configuration, the engine and its tokenizer, the chat
// renderer, the rate limiter, and the generation jobs in flight. Lives in Server; used only
// on the I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/engine.h"
#include "server/chat_prompt.h"
#include "server/http_types.h"
#include "server/rate_limiter.h"
#include "server/server_config.h"
#include "server/server_observer.h"

namespace boost::asio {
class io_context;
class thread_pool;
}

namespace tally {
class Tokenizer;
}

namespace tally::server {

class GenerationJob;
struct ApiError;

struct ServerContext {
  boost::asio::io_context& io;
  // Tokenizing prompts and rendering chat templates (see run_off_io_thread).
  boost::asio::thread_pool& prompt_workers;
  const ServerConfig& config;
  Engine& engine;
  const Tokenizer& tokenizer;
  const ChatRenderer& chat;
  ServerObserver* observer = nullptr;  // may be null
  RateLimiter& rate_limiter;
  int64_t started_unix = 0;
  bool draining = false;
  int64_t queued_bytes = 0;  // charged by requests not yet running (queued_bytes.h)
  // Jobs in flight. The map owns them (engine callbacks hold weak pointers), so a job never
  // outlives the server, and a drain that runs out of time can abort them.
  std::unordered_map<GenerationJob*, std::shared_ptr<GenerationJob>> jobs;

  // The served name a request's "model" stands for ("" = the first one); nullopt if none.
  std::optional<std::string> resolve_model(const std::string& requested) const;
  // Who a rate limit applies to: the API key's id, else the client's address.
  static std::string rate_client(HttpExchange& exchange);
  static std::string rate_client(const std::string& key_id, const std::string& remote);
};

// Work that grows with the request (tokenizing megabytes of text, a chat template's loops)
// runs on ctx.prompt_workers, never on the I/O thread, so /health and every stream keep
// moving meanwhile. `work` runs on a worker; `then` runs on the I/O thread after it (and is
// destroyed there: it may hold the exchange). Both usually share a shared_ptr to their
// state. The handler calls this only after authentication and the rate limiter passed.
void run_off_io_thread(ServerContext& ctx, std::function<void()> work, std::function<void()> then);

// The 429 of a rate limiter's refusal (with Retry-After).
ApiError rate_limit_error(const RateLimiter::Decision& decision);
// Answers an exchange with an API error (and notes the message for the access log).
void reply_error(HttpExchange& exchange, const ApiError& error);
// Answers with a JSON body.
void reply_json(HttpExchange& exchange, int status, std::string body);
// Logs the request fields that were present and ignored.
void log_ignored_fields(HttpExchange& exchange, const std::vector<std::string>& ignored);

}  // namespace tally::server
