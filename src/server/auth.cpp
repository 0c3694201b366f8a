#include "server/auth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>

namespace tally::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length, so a short guess takes as long as a full one.
  const size_t n = std::max(a.size(), b.size());
  volatile uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

ApiKeys::ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {
  for (const auto& key : keys_) ids_.push_back(key_id(key));
}

Result<std::vector<std::string>> ApiKeys::read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::kNotFound, "--api-keys-file {}: cannot open", path);
  std::vector<std::string> keys;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const std::string_view key = trim(line);
    if (key.empty() || key.front() == '#') continue;
    for (char c : key) {
      if (c <= ' ' || c > '~') {
        return make_error(ErrorCode::kInvalidArgument,
                          "--api-keys-file {}:{}: a key must be printable ASCII without spaces",
                          path, line_no);
      }
    }
    keys.emplace_back(key);
  }
  if (keys.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "--api-keys-file {}: no keys in the file", path);
  }
  return keys;
}

std::optional<std::string> ApiKeys::check(std::optional<std::string_view> authorization) const {
  if (!authorization) return std::nullopt;
  std::string_view value = trim(*authorization);
  constexpr std::string_view kBearer = "Bearer ";
  if (value.size() <= kBearer.size()) return std::nullopt;
  for (size_t i = 0; i < kBearer.size(); ++i) {  // the scheme is case-insensitive
    if (std::tolower(static_cast<unsigned char>(value[i])) !=
        std::tolower(static_cast<unsigned char>(kBearer[i]))) {
      return std::nullopt;
    }
  }
  const std::string_view token = trim(value.substr(kBearer.size()));
  // Compare against every key, without stopping at a match.
  size_t match = keys_.size();
  for (size_t i = 0; i < keys_.size(); ++i) {
    const bool equal = constant_time_equal(token, keys_[i]);
    match = equal ? i : match;
  }
  if (match == keys_.size()) return std::nullopt;
  return ids_[match];
}

std::string ApiKeys::key_id(std::string_view key) {
  // FNV-1a: enough to tell keys apart in a log; not a secret-preserving hash, but 32 bits of
  // it say little about a key of any useful length.
  uint64_t h = 1469598103934665603ull;
  for (char c : key) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return fmt::format("key-{:08x}", static_cast<uint32_t>(h ^ (h >> 32)));
}

}  // namespace tally::server
