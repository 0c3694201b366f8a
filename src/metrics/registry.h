// A small metric registry that renders the Prometheus text format 0.0.4.
//
// Shape: a Registry owns Families (one metric name each: HELP, TYPE, label names); a family's
// children are its label-value combinations, each a Counter, Gauge or Histogram.
//
// Thread rules: set up (add_* and with()) takes a mutex, so look children up once and keep the
// references: they stay valid for the registry's life. Updating a child (inc, set, observe) is
// lock-free and may happen on any thread, concurrently with render(). render() may be called
// from any thread; concurrent renders are serialized.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/counter.h"
#include "metrics/histogram.h"

namespace tally::metrics {

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };
std::string_view metric_type_name(MetricType type);  // "counter", "gauge", "histogram"

class FamilyBase {
 public:
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;
  virtual ~FamilyBase() = default;

  const std::string& name() const { return name_; }  // prefix included
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends the HELP and TYPE lines and every child's samples.
  virtual void render(std::string& out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  // `{a="x",b="y"}` (or `{...,le="0.5"}`), nothing when there are no labels at all.
  void append_labels(std::string& out, std::span<const std::string> values,
                     std::string_view le) const;
  void check_label_values(size_t count) const;

  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
  mutable std::mutex mutex_;  // guards the children list; updates of a child never take it
};

template <class Metric>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names,
         std::vector<double> bounds);
  // Defined where Child is complete (clang instantiates an inline one wherever a Family dies).
  ~Family() override;

  // The child with these label values (one per label name, in order), created on first use.
  Metric& with(std::initializer_list<std::string_view> label_values);
  Metric& with(std::span<const std::string> label_values);

  void render(std::string& out) const override;

 private:
  struct Child;
  Metric& find_or_add(std::vector<std::string> values);

  std::vector<double> bounds_;  // histograms: the buckets' upper bounds, shared by children
  std::vector<std::unique_ptr<Child>> children_;  // creation order = render order
};

// Defined for these three in registry.cpp.
extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  // `prefix` is put before every metric name: "tally:", "vllm:" ("" for none).
  explicit Registry(std::string prefix = "");
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Names are given without the prefix. Invalid or duplicate names and label names are bugs
  // (checked). A counter's name ends in "_total", as the text format wants. A family without
  // labels has its one child created now (with({})).
  CounterFamily& add_counter(std::string_view name, std::string_view help,
                             std::vector<std::string> label_names = {});
  GaugeFamily& add_gauge(std::string_view name, std::string_view help,
                         std::vector<std::string> label_names = {});
  HistogramFamily& add_histogram(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names, std::vector<double> bounds);

  // Runs at the start of every render() (e.g. copies an engine snapshot into gauges). A hook
  // must not call back into this registry.
  void add_collect_hook(std::function<void()> hook);

  std::string render();
  const std::string& prefix() const { return prefix_; }

 private:
  void check_new_name(const std::string& full_name) const;

  std::string prefix_;
  std::mutex mutex_;  // families_, hooks_, and one render at a time
  std::vector<std::unique_ptr<FamilyBase>> families_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace tally::metrics
