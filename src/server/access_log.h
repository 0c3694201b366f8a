// The access log: one JSON object per line for every finished exchange, e.g.
//   {"ts":"2024-05-01T12:00:00.123Z","request_id":"req-...","remote":"127.0.0.1:5555",
//    "method":"POST","path":"/v1/completions","status":200,"bytes":512,"duration_ms":41.2,
//    "model":"stories260K","prompt_tokens":5,"completion_tokens":16,"key":"key-1a2b3c4d",
//    "user_agent":"curl/7.88.1","client_gone":false}
// ("model", the token counts, "key", "error" only when known; with speculation on,
// "spec_draft_tokens" and "spec_accepted_tokens": the request's acceptance). Lines are written whole
// with one write() each, so they never interleave with other output.
#pragma once

#include <cstdio>
#include <string>

#include "base/status.h"
#include "server/http_types.h"

namespace tally::server {

class AccessLog {
 public:
  // "-" = stdout, "" or "off" = no log, anything else = a file opened for appending.
  static Result<AccessLog> open(const std::string& where);
  AccessLog() = default;
  AccessLog(AccessLog&& other) noexcept;
  AccessLog& operator=(AccessLog&& other) noexcept;
  ~AccessLog();

  bool enabled() const { return fd_ >= 0; }
  void write(const ExchangeSummary& summary);

  // The line for one exchange (without the newline); exposed for tests.
  static std::string format(const ExchangeSummary& summary, double unix_seconds);

 private:
  int fd_ = -1;
  bool owned_ = false;
};

}  // namespace tally::server
