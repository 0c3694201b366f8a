#include "loadgen/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tally::loadgen {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// A step of 1, 2 or 5 x 10^k giving about `n` ticks over `span`.
double nice_step(double span, int n) {
  const double raw = span / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

// Expands the range to whole ticks; a flat or empty range gets a width.
void widen(Range& r, bool from_zero) {
  if (r.empty()) r = {0, 1};
  if (from_zero) r.lo = std::min(r.lo, 0.0);
  if (r.hi - r.lo < 1e-12) r.hi = r.lo + std::max(1.0, std::abs(r.lo));
  const double step = nice_step(r.hi - r.lo, 5);
  r.lo = std::floor(r.lo / step) * step;
  r.hi = std::ceil(r.hi / step) * step;
}

std::string tick_text(double v) {
  if (std::abs(v) >= 1000 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (std::abs(v) >= 1) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

struct Frame {
  double x0, y0, w, h;  // plot area in pixels
  Range xr, yr;
  double px(double x) const { return x0 + (x - xr.lo) / (xr.hi - xr.lo) * w; }
  double py(double y) const { return y0 + h - (y - yr.lo) / (yr.hi - yr.lo) * h; }
};

void draw_axes(std::string& out, const Frame& f, const ChartPanel& p) {
  out += fmt::format(
      R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#444"/>)"
      "\n",
      f.x0, f.y0, f.w, f.h);
  const double xs = nice_step(f.xr.hi - f.xr.lo, 5);
  for (double x = f.xr.lo; x <= f.xr.hi + xs * 1e-6; x += xs) {
    out += fmt::format(
        R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#ddd"/>)"
        R"(<text x="{0:.1f}" y="{3:.1f}" font-size="11" text-anchor="middle">{4}</text>)"
        "\n",
        f.px(x), f.y0, f.y0 + f.h, f.y0 + f.h + 14, tick_text(x));
  }
  const double ys = nice_step(f.yr.hi - f.yr.lo, 5);
  for (double y = f.yr.lo; y <= f.yr.hi + ys * 1e-6; y += ys) {
    out +=
        fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#ddd"/>)"
                    R"(<text x="{3:.1f}" y="{4:.1f}" font-size="11" text-anchor="end">{5}</text>)"
                    "\n",
                    f.x0, f.py(y), f.x0 + f.w, f.x0 - 4, f.py(y) + 4, tick_text(y));
  }
  out += fmt::format(
      R"(<text x="{:.1f}" y="{:.1f}" font-size="13" text-anchor="middle" font-weight="bold">{}</text>)"
      "\n",
      f.x0 + f.w / 2, f.y0 - 10, xml_escape(p.title));
  out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="middle">{}</text>)"
                     "\n",
                     f.x0 + f.w / 2, f.y0 + f.h + 32, xml_escape(p.x_label));
  out += fmt::format(
      R"svg(<text x="{0:.1f}" y="{1:.1f}" font-size="12" text-anchor="middle" transform="rotate(-90 {0:.1f} {1:.1f})">{2}</text>)svg"
      "\n",
      f.x0 - 44, f.y0 + f.h / 2, xml_escape(p.y_label));
}

void draw_series(std::string& out, const Frame& f, const ChartSeries& s, int i) {
  std::string pts;
  for (const auto& [x, y] : s.points) {
    if (std::isfinite(x) && std::isfinite(y))
      pts += fmt::format("{:.1f},{:.1f} ", f.px(x), f.py(y));
  }
  if (!pts.empty()) {
    pts.pop_back();
    out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.8" points="{}"/>)"
                       "\n",
                       xml_escape(s.color), pts);
  }
  for (size_t k = 0; s.markers && k < s.points.size(); ++k) {
    const auto [x, y] = s.points[k];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)"
                       "\n",
                       f.px(x), f.py(y), xml_escape(s.color));
    if (k < s.point_labels.size() && !s.point_labels[k].empty()) {
      out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10">{}</text>)"
                         "\n",
                         f.px(x) + 5, f.py(y) - 5, xml_escape(s.point_labels[k]));
    }
  }
  const double ly = f.y0 + 14 + 15 * i;  // legend, top left inside the frame
  out += fmt::format(
      R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="{3}" stroke-width="3"/>)"
      R"(<text x="{4:.1f}" y="{5:.1f}" font-size="11">{6}</text>)"
      "\n",
      f.x0 + 8, ly, f.x0 + 26, xml_escape(s.color), f.x0 + 30, ly + 4, xml_escape(s.name));
}

}  // namespace

std::string render_svg(const std::string& title, const std::vector<ChartPanel>& panels, int columns,
                       int panel_w, int panel_h) {
  columns = std::max(1, columns);
  const int rows = std::max<int>(1, (static_cast<int>(panels.size()) + columns - 1) / columns);
  const int width = columns * panel_w;
  const int height = rows * panel_h + 40;
  std::string out = fmt::format(
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      "\n"
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif">)"
      "\n"
      R"(<rect width="{0}" height="{1}" fill="white"/>)"
      "\n"
      R"(<text x="{2}" y="24" font-size="16" text-anchor="middle" font-weight="bold">{3}</text>)"
      "\n",
      width, height, width / 2, xml_escape(title));
  for (size_t i = 0; i < panels.size(); ++i) {
    const ChartPanel& p = panels[i];
    Frame f{};
    f.x0 = static_cast<double>(static_cast<int>(i) % columns * panel_w) + 64;
    f.y0 = static_cast<double>(static_cast<int>(i) / columns * panel_h) + 40 + 30;
    f.w = panel_w - 84;
    f.h = panel_h - 80;
    for (const auto& s : p.series) {
      for (const auto& [x, y] : s.points) {
        f.xr.add(x);
        f.yr.add(y);
      }
    }
    widen(f.xr, /*from_zero=*/true);
    widen(f.yr, /*from_zero=*/true);
    out += "<g>\n";
    draw_axes(out, f, p);
    for (size_t k = 0; k < p.series.size(); ++k)
      draw_series(out, f, p.series[k], static_cast<int>(k));
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tally::loadgen
