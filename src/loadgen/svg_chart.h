// A hand-written SVG line chart: one panel with axes, "nice" ticks, labelled series (lines,
// optional point markers with labels) and a legend. Enough for the load generator's plots;
// text is XML-escaped, numbers are finite or skipped.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tally::loadgen {

struct ChartSeries {
  std::string name;
  std::string color;                              // "#1f77b4"
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool markers = false;
  std::vector<std::string> point_labels;  // beside each marker ("" or absent: none)
};

struct ChartPanel {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

// The panels laid out in a grid of `columns`, each `panel_w` x `panel_h` pixels, under a title.
std::string render_svg(const std::string& title, const std::vector<ChartPanel>& panels,
                       int columns = 2, int panel_w = 460, int panel_h = 320);

std::string xml_escape(const std::string& text);

}  // namespace tally::loadgen
