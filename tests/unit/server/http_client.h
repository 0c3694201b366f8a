// A small blocking HTTP/1.1 client over a loopback socket for the server's tests: raw bytes
// in and out, so malformed requests, slow clients and hang-ups can be played exactly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tally_test {

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  std::string header(const std::string& name) const;
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send_raw(std::string_view bytes);
  // A request with Content-Length (when there is a body) and the given extra header lines.
  bool send(const std::string& method, const std::string& path, const std::string& body = "",
            const std::vector<std::string>& headers = {});
  // One whole response; nullopt when the connection closed or `timeout` passed first.
  std::optional<HttpReply> read_reply(double timeout = 10);
  // Bytes as they come until `needle` has arrived (true) or timeout / close (false).
  bool read_until(std::string_view needle, double timeout = 10);
  // True when the server closes the connection within `timeout`.
  bool wait_closed(double timeout = 5);
  void close();
  // shutdown(SHUT_WR): no more bytes from this side; the connection stays open for reading.
  void shutdown_send();
  const std::string& received() const { return buffer_; }

 private:
  bool fill(double deadline);  // reads more into buffer_; false on close/timeout
  int fd_ = -1;
  std::string buffer_;
};

// One request on a fresh connection.
HttpReply http_request(uint16_t port, const std::string& method, const std::string& path,
                       const std::string& body = "", const std::vector<std::string>& headers = {});

// The JSON payloads of an SSE body's "data: " lines, in order ("[DONE]" included).
std::vector<std::string> sse_events(const std::string& body);

}  // namespace tally_test
