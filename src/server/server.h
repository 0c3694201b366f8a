// `tally serve` as a library: the OpenAI-compatible server over an Engine. One I/O thread
// (the one calling run()) owns every socket; the engine's thread posts events back to it.
//
//   Server server(config, engine, chat_renderer, observer);
//   auto port = server.listen();   // binds config.host:config.port (0: a free port)
//   server.run();                   // until SIGTERM/SIGINT or stop(), then drains
//
// Shutdown (SIGTERM, SIGINT, stop()): stop accepting, close idle connections, answer new
// requests on open ones with 503, let running requests finish for up to drain_timeout, then
// abort the rest (their streams end with finish_reason "abort"), close every connection,
// and shut the engine down. A second signal skips the wait.
#pragma once

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "engine/engine.h"
#include "server/chat_prompt.h"
#include "server/server_config.h"
#include "server/server_observer.h"

namespace tally::server {

class Server {
 public:
  // `engine` must outlive the server; `observer` may be null (then /metrics is empty).
  Server(ServerConfig config, Engine& engine, std::unique_ptr<ChatRenderer> chat,
         ServerObserver* observer);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds; the port bound (the one asked for, or the one picked for port 0).
  Result<uint16_t> listen();
  // Serves on the calling thread until shut down (see above); returns after the engine has
  // been shut down, so no engine callback runs afterwards.
  void run();
  // Starts the shutdown, as SIGTERM does. Any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::server
