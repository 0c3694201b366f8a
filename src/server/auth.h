// Bearer-token authentication: `Authorization: Bearer <key>` against the keys given by
// --api-key and --api-keys-file. Keys are compared in constant time (the time taken does
// not depend on where a guess first differs, nor on which key matched).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tally::server {

class ApiKeys {
 public:
  ApiKeys() = default;  // no keys: authentication is off
  explicit ApiKeys(std::vector<std::string> keys);

  // One key per line; blank lines and lines starting with '#' are skipped, surrounding
  // whitespace is trimmed. NotFound / InvalidArgument naming the file and line.
  static Result<std::vector<std::string>> read_file(const std::string& path);

  bool enabled() const { return !keys_.empty(); }
  // The matching key's id (see key_id) for an Authorization header value, nullopt when it
  // is missing, not a Bearer token, or no key matches.
  std::optional<std::string> check(std::optional<std::string_view> authorization) const;

  // A short, stable, non-secret name for a key (logs, rate-limit buckets): "key-" + 8 hex
  // digits of a hash.
  static std::string key_id(std::string_view key);

 private:
  std::vector<std::string> keys_;
  std::vector<std::string> ids_;
};

// Constant-time equality of two strings (time depends only on the lengths).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tally::server
