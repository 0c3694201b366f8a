#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>

namespace tally_test {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string HttpReply::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? "" : it->second;
}

HttpClient::HttpClient(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
}

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void HttpClient::shutdown_send() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

bool HttpClient::send_raw(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return fd_ >= 0;
}

bool HttpClient::send(const std::string& method, const std::string& path, const std::string& body,
                      const std::vector<std::string>& headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& h : headers) req += h + "\r\n";
  if (!body.empty() || method == "POST") {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  return send_raw(req);
}

bool HttpClient::fill(double deadline) {
  if (fd_ < 0) return false;
  const double left = deadline - now_seconds();
  if (left <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) return false;
  char chunk[16384];
  const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool HttpClient::read_until(std::string_view needle, double timeout) {
  const double deadline = now_seconds() + timeout;
  while (buffer_.find(needle) == std::string::npos) {
    if (!fill(deadline)) return false;
  }
  return true;
}

bool HttpClient::wait_closed(double timeout) {
  const double deadline = now_seconds() + timeout;
  while (fd_ >= 0 && now_seconds() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return true;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
  return false;
}

std::optional<HttpReply> HttpClient::read_reply(double timeout) {
  const double deadline = now_seconds() + timeout;
  size_t head_end;
  while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return std::nullopt;
  }
  HttpReply reply;
  const std::string head = buffer_.substr(0, head_end);
  size_t pos = head.find("\r\n");
  const std::string status_line = head.substr(0, pos);
  reply.status = std::atoi(status_line.substr(status_line.find(' ') + 1).c_str());
  while (pos != std::string::npos && pos < head.size()) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line =
        head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      reply.headers[lower(line.substr(0, colon))] = line.substr(v);
    }
    pos = next;
  }
  buffer_.erase(0, head_end + 4);
  if (reply.header("transfer-encoding") == "chunked") {
    for (;;) {
      size_t line_end;
      while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
        if (!fill(deadline)) return std::nullopt;
      }
      const size_t size = std::stoul(buffer_.substr(0, line_end), nullptr, 16);
      while (buffer_.size() < line_end + 2 + size + 2) {
        if (!fill(deadline)) return std::nullopt;
      }
      reply.body += buffer_.substr(line_end + 2, size);
      buffer_.erase(0, line_end + 2 + size + 2);
      if (size == 0) break;
    }
  } else if (!reply.header("content-length").empty()) {
    const size_t length = std::stoul(reply.header("content-length"));
    while (buffer_.size() < length) {
      if (!fill(deadline)) return std::nullopt;
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
  } else {
    while (fill(deadline)) {
    }
    reply.body = std::move(buffer_);
    buffer_.clear();
  }
  return reply;
}

HttpReply http_request(uint16_t port, const std::string& method, const std::string& path,
                       const std::string& body, const std::vector<std::string>& headers) {
  HttpClient client(port);
  client.send(method, path, body, headers);
  return client.read_reply().value_or(HttpReply{});
}

std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end == std::string::npos ? body.size() : end + 2;
  }
  return out;
}

}  // namespace tally_test
