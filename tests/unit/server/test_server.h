// A real Server on a free loopback port over a FakeEngine, run on a background thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "fake_engine.h"
#include "http_client.h"
#include "server/chat_prompt.h"
#include "server/server.h"

namespace tally_test {

// Counts what the server reports to its observer.
class CountingObserver final : public tally::server::ServerObserver {
 public:
  void on_engine_event(const tally::EngineEvent& event) override {
    if (event.kind == tally::EngineEventKind::kFinished) ++finished;
  }
  std::string render_metrics() override {
    return "# TYPE test_finished counter\ntest_finished_total " + std::to_string(finished.load()) +
           "\n";
  }
  std::atomic<int> finished{0};
};

class TestServer {
 public:
  // Defaults suited to tests: no access log, short timeouts.
  static tally::server::ServerConfig default_config();

  explicit TestServer(tally::server::ServerConfig config = default_config());
  // With this chat renderer instead of ChatML.
  TestServer(tally::server::ServerConfig config,
             std::unique_ptr<tally::server::ChatRenderer> renderer);
  ~TestServer();

  uint16_t port() const { return port_; }
  FakeEngine& engine() { return engine_; }
  CountingObserver& observer() { return observer_; }
  // Starts the drain (as SIGTERM) and waits for run() to return.
  void stop();
  bool stopped() const { return stopped_; }

  HttpReply post(const std::string& path, const std::string& body,
                 const std::vector<std::string>& headers = {}) {
    return http_request(port_, "POST", path, body, headers);
  }
  HttpReply get(const std::string& path, const std::vector<std::string>& headers = {}) {
    return http_request(port_, "GET", path, "", headers);
  }

 private:
  FakeEngine engine_;
  CountingObserver observer_;
  std::unique_ptr<tally::server::Server> server_;
  std::thread thread_;
  uint16_t port_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace tally_test
