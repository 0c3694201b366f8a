// UTF-8 held back at piece boundaries: the bytes of a character cut across pieces wait until
// the character is complete, and ill-formed bytes become U+FFFD (one per maximal ill-formed
// subpart, as Unicode recommends). The streaming detokenizer uses it on token bytes; the
// server uses it as its own guarantee that no byte sequence, whatever its origin, breaks a
// stream or a JSON body.
//
// One instance per stream; not thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace tally::tok {

class Utf8Stream {
 public:
  // Appends to `out` the valid UTF-8 that `piece` completes.
  void push(std::string_view piece, std::string& out);
  std::string push(std::string_view piece) {
    std::string out;
    push(piece, out);
    return out;
  }
  // The held-back bytes of an unfinished character, as U+FFFD ("" when none); the stream
  // stays usable.
  std::string finish();
  bool holding() const { return !held_.empty(); }

 private:
  std::string held_;   // at most 3 bytes: a valid prefix of a character
  std::string bytes_;  // scratch: held_ + the piece
};

// `s` with ill-formed subparts replaced by U+FFFD (a cut-off character at the end too).
std::string utf8_valid(std::string_view s);

}  // namespace tally::tok
