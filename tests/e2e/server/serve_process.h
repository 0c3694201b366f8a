// A real `tally serve` child process on a free loopback port, for the end-to-end tests: started
// with --port 0 (the port is read from its start-up line on stderr), stopped with a signal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tally_test {

class ServeProcess {
 public:
  // `args` come after `tally serve --port 0 --access-log FILE` (the bundled model, a small KV
  // pool and 2 threads unless given).
  explicit ServeProcess(const std::vector<std::string>& args = {});
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool started() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:PORT"
  // Sends `signal` and waits; the exit status (-1 when it had to be killed).
  int stop(int signal, double timeout_seconds = 30);
  bool running();
  void send_signal(int signal);

  std::string stderr_text() const;
  std::string access_log() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  int exit_status_ = -1;
  std::string dir_;
};

// An HTTP exchange done by curl: the status and the body (raw, SSE included).
struct CurlReply {
  int status = 0;
  std::string body;
  std::string headers;  // the response headers, as received
};
// `body` goes in a file (--data-binary @file), so any bytes can be sent.
CurlReply curl(const std::string& url, const std::string& method, const std::string& body = "",
               const std::vector<std::string>& headers = {});

// Runs a script of tests/e2e/node with `env` (KEY=VALUE) set; its stdout, stderr and status.
struct NodeResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
NodeResult run_node(const std::string& script, const std::vector<std::string>& env);
// Installs the pinned openai package once (tests/e2e/node/install.sh). False, with the reason
// in `why`, when that failed (no node, no network).
bool node_sdk_available(std::string& why);

}  // namespace tally_test

// Skips a test that needs the openai SDK when it could not be installed; under CI=true that
// is a failure instead.
#define TALLY_REQUIRE_NODE_SDK()                                                           \
  do {                                                                                     \
    std::string tally_why_;                                                                \
    if (!::tally_test::node_sdk_available(tally_why_)) {                                   \
      if (::tally_test::in_ci()) FAIL() << "CI needs the openai npm package: " << tally_why_; \
      GTEST_SKIP() << "openai npm package unavailable (" << tally_why_ << "): skipped";    \
    }                                                                                      \
  } while (0)
