// A small HTTP/1.1 client for the load generator over Asio/Beast, plain http:// only. One
// thread runs everything: streaming requests start on their own connection, their body bytes
// are handed over with the time they arrived (for TTFT and inter-token latency), and timers
// schedule arrivals. fetch() is the blocking form for set-up calls (/v1/models, /tokenize).
//
// Thread rules: every call, and every handler, on the thread that calls run() / fetch().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "loadgen/base_url.h"

namespace tally::loadgen {

using Clock = std::chrono::steady_clock;

struct HttpRequestSpec {
  std::string method = "GET";
  std::string path;        // after the base URL's prefix: "/v1/completions"
  std::string body;        // sent as application/json when not empty
  std::string api_key;     // "Authorization: Bearer KEY" when not empty
  double timeout_s = 600;  // the whole exchange, connect to last byte
};

struct HttpStreamHandlers {
  std::function<void(int status)> on_status;                                  // the header arrived
  std::function<void(std::string_view bytes, Clock::time_point at)> on_body;  // body bytes
  std::function<void(const std::string& error)> on_end;  // "" = the body is complete
};

struct HttpResult {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(BaseUrl url);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const BaseUrl& url() const { return url_; }
  // Looks the host up once; every request then connects to what it found.
  Status resolve();
  // Starts a request; the handlers are called from run(). `sent` is set to when the
  // connection attempt began (the start of TTFT).
  void start(const HttpRequestSpec& spec, HttpStreamHandlers handlers, Clock::time_point* sent);
  // Calls `fn` from run() at `at` (at once when that is past).
  void call_at(Clock::time_point at, std::function<void()> fn);
  // Runs handlers and timers until none is left.
  void run();
  // One whole exchange, blocking. A failure to connect or a cut connection is an error;
  // any HTTP status is a result.
  Result<HttpResult> fetch(const HttpRequestSpec& spec);

 private:
  struct Impl;
  BaseUrl url_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::loadgen
