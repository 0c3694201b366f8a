#include "loadgen/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tally::loadgen {

ProgressBar::ProgressBar(std::string label, int total, bool enabled)
    : label_(std::move(label)),
      total_(std::max(total, 1)),
      enabled_(enabled && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int done, int failed) {
  done_ = done;
  failed_ = failed;
  const auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(done, failed);
}

void ProgressBar::draw(int done, int failed) {
  constexpr int kWidth = 30;
  const int filled = std::min(kWidth, done * kWidth / total_);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line =
      fmt::format("\r{} [{}{}] {}/{}  failed {}  {:.1f} s", label_, std::string(filled, '#'),
                  std::string(kWidth - filled, '.'), done, total_, failed, secs);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  draw(done_, failed_);
  std::fputs("\n", stderr);
}

}  // namespace tally::loadgen
