// Stop strings over streamed text (OpenAI semantics): generation stops when the text
// contains a stop string, and neither the stop string nor anything after it is output.
// Text that could still be the start of a stop string is held back until it either
// completes one (and is dropped) or stops matching (and is released).
//
// Which stop wins: the first one to complete in the text (the smallest end position), so
// the result is the same however the text is split into pieces; among stops completing at
// the same byte, the longest. Works on bytes, so UTF-8 stop strings match UTF-8 text.
//
// Not thread-safe; one per request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tally {

class StopMatcher {
 public:
  struct Update {
    std::string_view emit;     // safe to output now; valid until the next feed()/flush()
    bool stopped = false;      // a stop string completed: generation should end
    int32_t stop_index = -1;   // which one, an index into the stops given
  };

  // Empty stop strings never match (validate() reports them as errors).
  explicit StopMatcher(std::vector<std::string> stops);

  // InvalidArgument naming the entry for an empty stop string.
  static Status validate(const std::vector<std::string>& stops);

  // Appends newly generated text. After a stop, further text is ignored (emit is empty).
  Update feed(std::string_view piece);
  // Generation ended without a stop (EOS, length): returns the held-back text, now final.
  std::string_view flush();

  bool stopped() const { return stopped_; }
  // Bytes currently held back as a possible start of a stop string.
  size_t held_back() const { return pending_.size(); }

 private:
  // Longest suffix of pending_ that is a proper prefix of some stop string.
  size_t partial_match_length() const;

  std::vector<std::string> stops_;
  std::string pending_;  // text not yet emitted: always a possible start of a stop
  std::string out_;      // backing store of the last emit
  bool stopped_ = false;
};

}  // namespace tally
