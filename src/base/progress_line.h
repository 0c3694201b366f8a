// The rule every progress display on stderr follows (`tally` loading or converting a model,
// `tally bench serve`'s requests): drawn only when stderr is a terminal, redrawn at most ten
// times a second, a bar of `#` and `.` columns. Each display adds its own text around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tally {

class ProgressLine {
 public:
  // Enabled when `wanted` and stderr is a terminal.
  explicit ProgressLine(bool wanted = true);
  bool enabled() const { return enabled_; }
  bool drawn() const { return drawn_; }
  // Whether to redraw now: never when disabled; else the first time, when `force`, or when
  // 100 ms have passed since the last redraw (which this call then records).
  bool due(bool force = false);
  // The line was erased: the next due() draws again.
  void forget() { drawn_ = false; }

  // "#####....." : `width` columns, done / total of them filled (clamped to [0, width]).
  static std::string bar(int64_t done, int64_t total, int width);

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace tally
