// A one-line progress bar on stderr ("[#####.....] 12/32  failed 1  3.4 s"), redrawn at most
// ten times a second; silent when disabled or when stderr is not a terminal.
#pragma once

#include <chrono>
#include <string>

#include "base/progress_line.h"

namespace tally::loadgen {

class ProgressBar {
 public:
  ProgressBar(std::string label, int total, bool enabled);
  void update(int done, int failed);
  void finish();  // the last state, then a newline

 private:
  void draw(int done, int failed);
  std::string label_;
  int total_;
  ProgressLine line_;
  int done_ = 0;
  int failed_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tally::loadgen
