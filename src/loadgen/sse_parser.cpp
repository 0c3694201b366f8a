#include "loadgen/sse_parser.h"

namespace tally::loadgen {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
  for (char c : bytes) {
    if (malformed_) return;
    if (c == '\n' && after_cr_) {  // the '\n' of a "\r\n" already ended its line
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      end_line(events);
      continue;
    }
    if (line_.size() >= kMaxLineBytes) {
      malformed_ = true;
      return;
    }
    line_.push_back(c);
  }
}

void SseParser::end_line(std::vector<std::string>& events) {
  if (line_.empty()) {  // a blank line dispatches the event
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  std::string_view line = line_;
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (colon != 0 && field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  }
  line_.clear();
}

}  // namespace tally::loadgen
