#include "sampling/stop_matcher.h"

#include <algorithm>

namespace tally {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  size_t longest = 0;
  for (const std::string& s : stops_) longest = std::max(longest, s.size());
  pending_.reserve(2 * longest + 64);
  out_.reserve(2 * longest + 64);
}

Status StopMatcher::validate(const std::vector<std::string>& stops) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) {
      return make_error(ErrorCode::kInvalidArgument, "stop[{}] is an empty string", i);
    }
  }
  return {};
}

StopMatcher::Update StopMatcher::feed(std::string_view piece) {
  out_.clear();
  if (stopped_) return {};
  pending_.append(piece);

  // Earliest-completing stop. Any match lies inside pending_: everything emitted so far
  // was, when emitted, no possible start of a stop string.
  const std::string_view text = pending_;
  size_t best_end = std::string_view::npos;
  size_t best_pos = 0;
  int32_t best = -1;
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) continue;
    const size_t pos = text.find(stops_[i]);
    if (pos == std::string_view::npos) continue;
    const size_t end = pos + stops_[i].size();
    if (end < best_end || (end == best_end && pos < best_pos)) {
      best_end = end;
      best_pos = pos;
      best = static_cast<int32_t>(i);
    }
  }
  if (best >= 0) {
    out_.assign(text.substr(0, best_pos));
    pending_.clear();
    stopped_ = true;
    return {out_, true, best};
  }

  const size_t emit = pending_.size() - partial_match_length();
  out_.assign(text.substr(0, emit));
  pending_.erase(0, emit);
  return {out_, false, -1};
}

std::string_view StopMatcher::flush() {
  out_.clear();
  if (stopped_) return {};
  out_.swap(pending_);
  return out_;
}

size_t StopMatcher::partial_match_length() const {
  const std::string_view text = pending_;
  size_t longest = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(text.size(), stop.empty() ? 0 : stop.size() - 1);
    for (size_t len = max_len; len > longest; --len) {
      if (text.substr(text.size() - len) == std::string_view(stop).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace tally
