// Server-Sent Events, parsed incrementally: bytes go in as the network delivers them (an event
// may be cut anywhere, even inside a "\r\n"), whole events come out. Only what a streaming
// completion needs: "data:" lines (several are joined by '\n'), events end at a blank line;
// comments (":...") and other fields (event:, id:, retry:) are skipped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tally::loadgen {

class SseParser {
 public:
  // Appends the data of each event completed by `bytes` to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);
  // Bytes of an event not yet ended by a blank line (a stream that stops here was cut short).
  bool has_partial_event() const { return !line_.empty() || has_data_; }
  // Longest line accepted; a longer one makes feed() stop and malformed() true.
  static constexpr size_t kMaxLineBytes = 16 << 20;
  bool malformed() const { return malformed_; }

 private:
  void end_line(std::vector<std::string>& events);
  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte was '\r': a following '\n' ends nothing more
  bool malformed_ = false;
};

}  // namespace tally::loadgen
