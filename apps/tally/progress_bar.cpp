#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace tally::cli {

ProgressBar::ProgressBar(std::string label) : ProgressBar(std::move(label), ::isatty(STDERR_FILENO) == 1) {}

ProgressBar::ProgressBar(std::string label, bool enabled) : label_(std::move(label)), enabled_(enabled) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(const std::string& label, int64_t done, int64_t total, int width) {
  const double fraction = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(fraction * width);
  return fmt::format("{} [{}{}] {:3d}% {}/{}", label, std::string(filled, '#'),
                     std::string(width - filled, '.'), static_cast<int>(fraction * 100), done, total);
}

void ProgressBar::update(int64_t done, int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  // \r and erase-line: the bar redraws in place.
  fmt::print(stderr, "\r\033[K{}", render(label_, done, total, 30));
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

std::function<void(int64_t, int64_t)> ProgressBar::callback() {
  return [this](int64_t done, int64_t total) { update(done, total); };
}

}  // namespace tally::cli
