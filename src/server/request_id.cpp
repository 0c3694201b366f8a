#include "server/request_id.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <random>

namespace tally::server {

bool request_id_acceptable(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\\') return false;
  }
  return true;
}

std::string request_id_new() {
  static const uint64_t prefix = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) & 0xffffffff00000000ull;
  }();
  static std::atomic<uint64_t> counter{0};
  return fmt::format("req-{:016x}", prefix | (counter.fetch_add(1) & 0xffffffffull));
}

}  // namespace tally::server
