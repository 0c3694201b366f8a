#include "loadgen/base_url.h"

#include <charconv>

namespace tally::loadgen {

namespace {

Result<uint16_t> parse_port(const std::string& url, const std::string& text) {
  unsigned port = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, port);
  if (text.empty() || ec != std::errc() || p != end || port == 0 || port > 65535) {
    return make_error(ErrorCode::kInvalidArgument, "--base-url '{}': port '{}' is not 1-65535", url,
                      text);
  }
  return static_cast<uint16_t>(port);
}

}  // namespace

std::string BaseUrl::text() const { return "http://" + host_header + path_prefix; }

Result<BaseUrl> parse_base_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return make_error(ErrorCode::kUnsupported,
                      "--base-url '{}': https is not supported (plain http:// only)", url);
  }
  if (url.rfind(scheme, 0) != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--base-url '{}' must start with http:// (e.g. http://127.0.0.1:8000)", url);
  }
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  BaseUrl out;
  if (slash != std::string::npos) out.path_prefix = rest.substr(slash);
  while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
  size_t port_at = std::string::npos;               // index of the ':' before the port
  if (!authority.empty() && authority[0] == '[') {  // [v6 address]:port
    const size_t close = authority.find(']');
    if (close == std::string::npos ||
        (close + 1 < authority.size() && authority[close + 1] != ':')) {
      return make_error(ErrorCode::kInvalidArgument, "--base-url '{}': bad [v6] host", url);
    }
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) port_at = close + 1;
  } else {
    port_at = authority.find(':');
    out.host = authority.substr(0, port_at);
  }
  if (out.host.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "--base-url '{}' has no host", url);
  }
  if (port_at != std::string::npos) {
    TALLY_ASSIGN_OR_RETURN(out.port, parse_port(url, authority.substr(port_at + 1)));
  }
  const bool v6 = out.host.find(':') != std::string::npos;
  out.host_header = (v6 ? "[" + out.host + "]" : out.host) + ":" + std::to_string(out.port);
  return out;
}

}  // namespace tally::loadgen
