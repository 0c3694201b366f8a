// The target server's address from --base-url: plain http:// only (no TLS in tally's client).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace tally::loadgen {

struct BaseUrl {
  std::string host;  // "127.0.0.1", "localhost", "[::1]" without the brackets
  uint16_t port = 80;
  std::string path_prefix;   // "" or "/prefix" (no trailing '/'), put before every endpoint
  std::string host_header;   // "host:port" as sent in Host
  std::string text() const;  // "http://host:port/prefix"
};

// "http://host[:port][/prefix]". https:// and other schemes are refused with a message.
Result<BaseUrl> parse_base_url(const std::string& url);

}  // namespace tally::loadgen
