// Request ids: the client's X-Request-Id when it is a sane token (so a caller can follow its
// request through the logs), else a fresh one. Echoed in the response's X-Request-Id.
#pragma once

#include <string>
#include <string_view>

namespace tally::server {

// 1..128 printable ASCII characters, no spaces or quotes.
bool request_id_acceptable(std::string_view id);
// "req-" + 16 hex digits: a random per-process prefix and a counter, unique in the process.
std::string request_id_new();

}  // namespace tally::server
