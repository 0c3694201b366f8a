#include "test_server.h"

#include <gtest/gtest.h>

namespace tally_test {

tally::server::ServerConfig TestServer::default_config() {
  tally::server::ServerConfig c;
  c.port = 0;
  c.model_path = "models/stories260K.gguf";
  c.served_model_names = {"stories260K"};
  c.access_log = "off";
  c.drain_timeout = 5;
  c.http.header_timeout = 2;
  c.http.read_timeout = 2;
  c.http.max_body_bytes = 64 << 10;
  return c;
}

TestServer::TestServer(tally::server::ServerConfig config)
    : TestServer(std::move(config), nullptr) {}

TestServer::TestServer(tally::server::ServerConfig config,
                       std::unique_ptr<tally::server::ChatRenderer> renderer) {
  if (!renderer) {
    renderer = tally::server::chatml_renderer(
        tally::ChatTemplateContext::from_tokenizer(engine_.tokenizer()));
  }
  server_ = std::make_unique<tally::server::Server>(std::move(config), engine_,
                                                    std::move(renderer), &observer_);
  auto port = server_->listen();
  EXPECT_TRUE(port.ok()) << port.status().message();
  port_ = port.ok() ? *port : 0;
  thread_ = std::thread([this] {
    server_->run();
    stopped_ = true;
  });
}

TestServer::~TestServer() { stop(); }

void TestServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace tally_test
