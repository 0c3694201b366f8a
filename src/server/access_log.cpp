#include "server/access_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace tally::server {

Result<AccessLog> AccessLog::open(const std::string& where) {
  AccessLog log;
  if (where.empty() || where == "off") return log;
  if (where == "-") {
    log.fd_ = STDOUT_FILENO;
    return log;
  }
  log.fd_ = ::open(where.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log.fd_ < 0) {
    return make_error(ErrorCode::kIo, "--access-log {}: cannot open for appending", where);
  }
  log.owned_ = true;
  return log;
}

AccessLog::AccessLog(AccessLog&& other) noexcept : fd_(other.fd_), owned_(other.owned_) {
  other.fd_ = -1;
  other.owned_ = false;
}

AccessLog& AccessLog::operator=(AccessLog&& other) noexcept {
  if (this != &other) {
    if (owned_) ::close(fd_);
    fd_ = other.fd_;
    owned_ = other.owned_;
    other.fd_ = -1;
    other.owned_ = false;
  }
  return *this;
}

AccessLog::~AccessLog() {
  if (owned_) ::close(fd_);
}

std::string AccessLog::format(const ExchangeSummary& s, double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const int millis = static_cast<int>((unix_seconds - static_cast<double>(whole)) * 1000);
  std::tm tm{};
  ::gmtime_r(&whole, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

  nlohmann::ordered_json line;
  line["ts"] = fmt::format("{}.{:03d}Z", stamp, millis);
  line["request_id"] = s.log.request_id;
  line["remote"] = s.request.remote;
  line["method"] = s.request.method;
  line["path"] = s.request.path.empty() ? s.request.target : s.request.path;
  line["status"] = s.status;
  line["bytes"] = s.bytes_sent;
  line["duration_ms"] = std::round(s.seconds * 1e4) / 10;
  if (!s.log.model.empty()) line["model"] = s.log.model;
  if (s.log.prompt_tokens > 0 || s.log.completion_tokens > 0) {
    line["prompt_tokens"] = s.log.prompt_tokens;
    line["completion_tokens"] = s.log.completion_tokens;
  }
  if (s.log.spec_draft_tokens > 0) {
    line["spec_draft_tokens"] = s.log.spec_draft_tokens;
    line["spec_accepted_tokens"] = s.log.spec_accepted_tokens;
  }
  if (!s.log.key_id.empty()) line["key"] = s.log.key_id;
  if (auto ua = s.request.header("User-Agent")) line["user_agent"] = std::string(*ua);
  if (!s.log.error.empty()) line["error"] = s.log.error;
  line["client_gone"] = s.client_gone;
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void AccessLog::write(const ExchangeSummary& summary) {
  if (fd_ < 0) return;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string line = format(summary, now);
  line += '\n';
  // One write per line: lines from this process never interleave. A short write (disk
  // full, closed pipe) loses the rest of the line, never the server.
  [[maybe_unused]] const ssize_t n = ::write(fd_, line.data(), line.size());
}

}  // namespace tally::server
