#include "base/progress_line.h"

#include <unistd.h>

#include <algorithm>

namespace tally {

ProgressLine::ProgressLine(bool wanted) : enabled_(wanted && ::isatty(STDERR_FILENO) == 1) {}

bool ProgressLine::due(bool force) {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && !force && now - last_draw_ < std::chrono::milliseconds(100)) return false;
  last_draw_ = now;
  drawn_ = true;
  return true;
}

std::string ProgressLine::bar(int64_t done, int64_t total, int width) {
  const int64_t filled = total > 0 ? std::clamp<int64_t>(done * width / total, 0, width) : 0;
  return std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(width - filled), '.');
}

}  // namespace tally
