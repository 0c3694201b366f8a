#include "progress_bar.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace tally::cli {

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(const std::string& label, int64_t done, int64_t total, int width) {
  const double fraction = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 0.0;
  return fmt::format("{} [{}] {:3d}% {}/{}", label, ProgressLine::bar(done, total, width),
                     static_cast<int>(fraction * 100), done, total);
}

void ProgressBar::update(int64_t done, int64_t total) {
  if (!line_.due(/*force=*/done >= total)) return;
  // \r and erase-line: the bar redraws in place.
  fmt::print(stderr, "\r\033[K{}", render(label_, done, total, 30));
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!line_.drawn()) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  line_.forget();
}

std::function<void(int64_t, int64_t)> ProgressBar::callback() {
  return [this](int64_t done, int64_t total) { update(done, total); };
}

}  // namespace tally::cli
