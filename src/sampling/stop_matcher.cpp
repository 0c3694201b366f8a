#include "sampling/stop_matcher.h"

namespace tally {

StopMatcher::StopMatcher(std::shared_ptr<const StopSet> stops) : stops_(std::move(stops)) {}

StopMatcher::StopMatcher(std::vector<std::string> stops)
    : StopMatcher(std::make_shared<const StopSet>(std::move(stops))) {}

StopMatcher::Update StopMatcher::feed(std::string_view piece) {
  if (stopped_) return {};
  if (head_ > 0 && head_ >= pending_.size() - head_) {
    work_ += pending_.size() - head_;
    pending_.erase(0, head_);
    head_ = 0;
  }
  const size_t start = pending_.size();
  pending_.append(piece);
  for (size_t i = start; i < pending_.size(); ++i) {
    state_ = stops_->next(state_, static_cast<uint8_t>(pending_[i]), work_);
    const int32_t hit = stops_->output(state_);
    if (hit < 0) continue;
    // The state's match lies inside pending_[head_, i]: everything emitted so far was, when
    // emitted, no possible start of a stop string.
    const size_t match_begin = i + 1 - stops_->strings()[static_cast<size_t>(hit)].size();
    const std::string_view emit = std::string_view(pending_).substr(head_, match_begin - head_);
    head_ = pending_.size();
    stopped_ = true;
    return {emit, true, hit};
  }
  // The state is the longest suffix that can still become a stop: hold back just that.
  const size_t keep = stops_->depth(state_);
  const size_t emit_end = pending_.size() - keep;
  const std::string_view emit = std::string_view(pending_).substr(head_, emit_end - head_);
  head_ = emit_end;
  return {emit, false, -1};
}

std::string_view StopMatcher::flush() {
  if (stopped_) return {};
  const std::string_view rest = std::string_view(pending_).substr(head_);
  head_ = pending_.size();
  state_ = StopSet::kStart;  // the held text is out: a later feed matches new text only
  return rest;
}

}  // namespace tally
