// A one-line progress bar on stderr for long operations (model load, conversion,
// benchmarks): drawn only when stderr is a terminal, so logs and pipes stay clean.
//
//   ProgressBar bar("loading model");
//   load(..., bar.callback());   // calls update(done, total) as it goes
//   bar.finish();                // erases the line (the destructor does too)
//
// Thread rules: one thread calls update() at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/progress_line.h"

namespace tally::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);  // enabled when stderr is a terminal
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Redraws at most every 100 ms, and always at done == total.
  void update(int64_t done, int64_t total);
  // Erases the bar, leaving the cursor at the start of an empty line.
  void finish();
  // update() as a callback for the libraries' progress hooks; the bar must outlive it.
  std::function<void(int64_t, int64_t)> callback();

  // "label [#####.....]  50% 4/8": the text of one redraw, `width` characters of bar.
  static std::string render(const std::string& label, int64_t done, int64_t total, int width);

 private:
  std::string label_;
  ProgressLine line_;
};

}  // namespace tally::cli
