// The streaming client against a scripted loopback server: body pieces are stamped with the
// time their bytes arrived (a piece sent later carries a later stamp, never the parse time of
// an earlier read), chunked and Content-Length and close-delimited bodies all end cleanly, and
// a connection cut mid-body or refused is an error that says so.
#include "loadgen/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tally::loadgen {
namespace {

// Accepts one connection, reads the request's header (and a Content-Length body), then runs
// `script` with a function that writes raw bytes; closes when the script returns.
class ScriptedServer {
 public:
  using Send = std::function<void(const std::string&)>;
  explicit ScriptedServer(std::function<void(const Send&)> script) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_fd_, 4);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, script = std::move(script)] {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      read_request(fd);
      script([fd](const std::string& bytes) { (void)!::write(fd, bytes.data(), bytes.size()); });
      ::close(fd);
    });
  }
  ~ScriptedServer() {
    thread_.join();
    ::close(listen_fd_);
  }
  BaseUrl url() const { return *parse_base_url("http://127.0.0.1:" + std::to_string(port_)); }
  std::string request;

 private:
  void read_request(int fd) {
    char buf[4096];
    size_t want = std::string::npos;
    while (request.size() < want) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
      const size_t end = request.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      const size_t cl = request.find("Content-Length: ");
      want = end + 4 + (cl == std::string::npos ? 0 : std::stoul(request.substr(cl + 16)));
    }
  }
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

struct Collected {
  int status = 0;
  std::vector<std::pair<std::string, Clock::time_point>> pieces;
  std::string error = "(not ended)";
};

Collected run_stream(HttpClient& client, const HttpRequestSpec& spec,
                     std::function<void()> on_first_piece = {}) {
  Collected c;
  HttpStreamHandlers h;
  h.on_status = [&c](int s) { c.status = s; };
  h.on_body = [&c, on_first_piece](std::string_view b, Clock::time_point at) {
    c.pieces.emplace_back(std::string(b), at);
    if (c.pieces.size() == 1 && on_first_piece) on_first_piece();
  };
  h.on_end = [&c](const std::string& e) { c.error = e; };
  EXPECT_TRUE(client.resolve().ok());
  client.start(spec, std::move(h), nullptr);
  client.run();
  return c;
}

TEST(HttpClient, PiecesCarryTheTimeTheirBytesArrived) {
  std::atomic<bool> first_seen{false};
  std::atomic<Clock::rep> second_sent_ticks{0};  // written by the server thread
  ScriptedServer server([&](const ScriptedServer::Send& send) {
    send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    send("b\r\ndata: one\n\n\r\n");
    while (!first_seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    second_sent_ticks = Clock::now().time_since_epoch().count();
    send("b\r\ndata: two\n\n\r\n0\r\n\r\n");
  });
  HttpClient client(server.url());
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = "/v1/completions";
  spec.body = "{}";
  spec.api_key = "k1";
  const Collected c = run_stream(client, spec, [&] { first_seen = true; });
  const Clock::time_point second_sent{Clock::duration(second_sent_ticks.load())};
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.status, 200);
  ASSERT_EQ(c.pieces.size(), 2u);
  EXPECT_EQ(c.pieces[0].first, "data: one\n\n");
  EXPECT_EQ(c.pieces[1].first, "data: two\n\n");
  EXPECT_LT(c.pieces[0].second, second_sent);
  EXPECT_GE(c.pieces[1].second, second_sent);
  EXPECT_NE(server.request.find("POST /v1/completions HTTP/1.1"), std::string::npos);
  EXPECT_NE(server.request.find("Authorization: Bearer k1"), std::string::npos);
  EXPECT_NE(server.request.find("Content-Type: application/json"), std::string::npos);
}

TEST(HttpClient, FetchReadsContentLengthAndCloseDelimitedBodies) {
  {
    ScriptedServer server([](const ScriptedServer::Send& send) {
      send("HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\nnope!");
    });
    HttpClient client(server.url());
    auto r = client.fetch({});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->body, "nope!");
  }
  {
    ScriptedServer server([](const ScriptedServer::Send& send) {
      send("HTTP/1.0 200 OK\r\n\r\nuntil ");
      send("close");
    });
    HttpClient client(server.url());
    auto r = client.fetch({});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->body, "until close");
  }
}

TEST(HttpClient, ACutOrRefusedConnectionIsAnError) {
  {
    ScriptedServer server([](const ScriptedServer::Send& send) {
      send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b");
    });
    HttpClient client(server.url());
    const Collected c = run_stream(client, {});
    EXPECT_EQ(c.error, "the server closed the connection mid-response");
  }
  BaseUrl nowhere;
  {
    ScriptedServer server([](const ScriptedServer::Send&) {});  // frees a port after
    nowhere = server.url();
    HttpClient client(server.url());
    (void)client.fetch({});
  }
  HttpClient client(nowhere);
  auto r = client.fetch({});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("connect"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tally::loadgen
