// Text pieces made safe for JSON and SSE: the bytes of a character cut across pieces are held
// back until the character is complete, ill-formed bytes become U+FFFD (one per maximal
// ill-formed subpart). The engine already sends whole characters; this is the server's own
// guarantee that no byte sequence, whatever its origin, breaks a stream or a JSON body.
#pragma once

#include <string>
#include <string_view>

namespace tally::server {

class Utf8Stream {
 public:
  // The valid UTF-8 that `piece` completes.
  std::string push(std::string_view piece);
  // The held-back bytes of an unfinished character, as U+FFFD ("" when none).
  std::string finish();
  bool holding() const { return !held_.empty(); }

 private:
  std::string held_;  // at most 3 bytes: a valid prefix of a character
};

// `s` with ill-formed subparts replaced by U+FFFD (a cut-off character at the end too).
std::string utf8_valid(std::string_view s);

}  // namespace tally::server
