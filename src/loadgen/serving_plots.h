// The plots of --plot: a run's latency CDFs (TTFT, TPOT, E2E) and output tok/s over time; a
// sweep's throughput-latency curve (median and p99 TTFT and TPOT against output tok/s, one
// point per request rate). SVG only: PNG would need an image library tally does not carry.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/report.h"
#include "loadgen/request_record.h"
#include "loadgen/summary.h"

namespace tally::loadgen {

std::string run_plot_svg(const std::string& title, const std::vector<RequestRecord>& records,
                         double duration_s);
std::string sweep_plot_svg(const std::string& title, const std::vector<SweepPoint>& points);

// Refuses anything but a .svg path before a run starts (a .png with its reason).
Status check_plot_path(const std::string& path);
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace tally::loadgen
