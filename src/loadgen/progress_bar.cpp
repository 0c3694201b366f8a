#include "loadgen/progress_bar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace tally::loadgen {

ProgressBar::ProgressBar(std::string label, int total, bool enabled)
    : label_(std::move(label)),
      total_(std::max(total, 1)),
      line_(enabled),
      start_(std::chrono::steady_clock::now()) {}

void ProgressBar::update(int done, int failed) {
  done_ = done;
  failed_ = failed;
  if (line_.due()) draw(done, failed);
}

void ProgressBar::draw(int done, int failed) {
  constexpr int kWidth = 30;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string line =
      fmt::format("\r{} [{}] {}/{}  failed {}  {:.1f} s", label_,
                  ProgressLine::bar(done, total_, kWidth), done, total_, failed, secs);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (!line_.enabled()) return;
  draw(done_, failed_);
  std::fputs("\n", stderr);
}

}  // namespace tally::loadgen
