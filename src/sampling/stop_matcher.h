// Stop strings over streamed text (OpenAI semantics): generation stops when the text
// contains a stop string, and neither the stop string nor anything after it is output.
// Text that could still be the start of a stop string is held back until it either
// completes one (and is dropped) or stops matching (and is released).
//
// Which stop wins: the first one to complete in the text (the smallest end position), so
// the result is the same however the text is split into pieces; among stops completing at
// the same byte, the longest. Works on bytes, so UTF-8 stop strings match UTF-8 text.
//
// Cost: the stops are one shared automaton (StopSet); feeding text costs amortized O(1) per
// byte (work() counts it), and at most the longest stop minus one byte is held back.
//
// Not thread-safe; one per sample. The StopSet may be shared by many matchers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/stop_set.h"

namespace tally {

class StopMatcher {
 public:
  struct Update {
    std::string_view emit;     // safe to output now; valid until the next feed()/flush()
    bool stopped = false;      // a stop string completed: generation should end
    int32_t stop_index = -1;   // which one, an index into the stops given
  };

  explicit StopMatcher(std::shared_ptr<const StopSet> stops);
  // Builds a StopSet of its own (tests, one-off use). Empty stop strings never match.
  explicit StopMatcher(std::vector<std::string> stops);
  explicit StopMatcher(std::initializer_list<std::string> stops)
      : StopMatcher(std::vector<std::string>(stops)) {}

  // Appends newly generated text. After a stop, further text is ignored (emit is empty).
  Update feed(std::string_view piece);
  // Generation ended without a stop (EOS, length): returns the held-back text, now final.
  std::string_view flush();

  bool stopped() const { return stopped_; }
  // Bytes currently held back as a possible start of a stop string.
  size_t held_back() const { return pending_.size() - head_; }
  // Automaton steps plus bytes moved inside the buffer so far: linear in the bytes fed.
  uint64_t work() const { return work_; }

 private:
  std::shared_ptr<const StopSet> stops_;
  StopSet::State state_ = StopSet::kStart;
  // pending_[head_, end) is held back; [0, head_) was emitted and is dropped lazily, once it
  // is at least as long as what remains, so each emitted byte pays for one moved byte.
  std::string pending_;
  size_t head_ = 0;
  uint64_t work_ = 0;
  bool stopped_ = false;
};

}  // namespace tally
