#include "metrics/registry.h"

#include <utility>

#include "base/check.h"
#include "metrics/text_format.h"

namespace tally::metrics {

std::string_view metric_type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// ---- FamilyBase ----

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {
  TALLY_CHECK(valid_metric_name(name_), "invalid metric name '{}'", name_);
  for (size_t i = 0; i < label_names_.size(); ++i) {
    const std::string& label = label_names_[i];
    TALLY_CHECK(valid_label_name(label), "metric {}: invalid label name '{}'", name_, label);
    TALLY_CHECK(!(type_ == MetricType::kHistogram && label == "le"),
                "metric {}: 'le' is the histogram's own label", name_);
    for (size_t j = 0; j < i; ++j) {
      TALLY_CHECK(label_names_[j] != label, "metric {}: label '{}' twice", name_, label);
    }
  }
}

void FamilyBase::check_label_values(size_t count) const {
  TALLY_CHECK(count == label_names_.size(), "metric {}: {} label values for {} label names", name_,
              count, label_names_.size());
}

void FamilyBase::append_labels(std::string& out, std::span<const std::string> values,
                               std::string_view le) const {
  if (label_names_.empty() && le.empty()) return;
  out += '{';
  for (size_t i = 0; i < label_names_.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    append_escaped_label_value(out, values[i]);
    out += '"';
  }
  if (!le.empty()) {
    if (!label_names_.empty()) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += '}';
}

// ---- Family<Metric> ----

template <class Metric>
struct Family<Metric>::Child {
  template <class... Args>
  Child(std::vector<std::string> values, Args&&... args)
      : label_values(std::move(values)), metric(std::forward<Args>(args)...) {}
  std::vector<std::string> label_values;
  Metric metric;
};

template <class Metric>
Family<Metric>::Family(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names, std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)) {
  TALLY_CHECK(valid_bucket_bounds(bounds_),
              "metric {}: bucket bounds must be finite and increasing", name_);
}

template <class Metric>
Family<Metric>::~Family() = default;

template <class Metric>
Metric& Family<Metric>::with(std::initializer_list<std::string_view> label_values) {
  return find_or_add(std::vector<std::string>(label_values.begin(), label_values.end()));
}

template <class Metric>
Metric& Family<Metric>::with(std::span<const std::string> label_values) {
  return find_or_add(std::vector<std::string>(label_values.begin(), label_values.end()));
}

template <class Metric>
Metric& Family<Metric>::find_or_add(std::vector<std::string> values) {
  check_label_values(values.size());
  std::lock_guard lock(mutex_);
  for (const auto& child : children_) {
    if (child->label_values == values) return child->metric;
  }
  if constexpr (std::is_same_v<Metric, Histogram>) {
    children_.push_back(
        std::make_unique<Child>(std::move(values), std::span<const double>(bounds_)));
  } else {
    children_.push_back(std::make_unique<Child>(std::move(values)));
  }
  return children_.back()->metric;
}

template <class Metric>
void Family<Metric>::render(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  append_escaped_help(out, help_);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += metric_type_name(type_);
  out += '\n';
  std::lock_guard lock(mutex_);
  for (const auto& child : children_) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const Histogram::Snapshot snap = child->metric.snapshot();
      for (size_t i = 0; i <= bounds_.size(); ++i) {
        out += name_;
        out += "_bucket";
        const std::string le = i < bounds_.size() ? format_value(bounds_[i]) : "+Inf";
        append_labels(out, child->label_values, le);
        out += ' ';
        append_value(out, static_cast<double>(snap.cumulative[i]));
        out += '\n';
      }
      out += name_;
      out += "_sum";
      append_labels(out, child->label_values, {});
      out += ' ';
      append_value(out, snap.sum);
      out += '\n';
      out += name_;
      out += "_count";
      append_labels(out, child->label_values, {});
      out += ' ';
      append_value(out, static_cast<double>(snap.count()));
      out += '\n';
    } else {
      out += name_;
      append_labels(out, child->label_values, {});
      out += ' ';
      append_value(out, child->metric.value());
      out += '\n';
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- Registry ----

Registry::Registry(std::string prefix) : prefix_(std::move(prefix)) {
  TALLY_CHECK(prefix_.empty() || valid_metric_name(prefix_), "invalid metric prefix '{}'", prefix_);
}

void Registry::check_new_name(const std::string& full_name) const {
  for (const auto& family : families_) {
    TALLY_CHECK(family->name() != full_name, "metric {} registered twice", full_name);
  }
}

CounterFamily& Registry::add_counter(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names) {
  TALLY_CHECK(name.ends_with("_total"), "counter {} must end in _total", name);
  std::lock_guard lock(mutex_);
  std::string full = prefix_ + std::string(name);
  check_new_name(full);
  auto family =
      std::make_unique<CounterFamily>(std::move(full), std::string(help), MetricType::kCounter,
                                      std::move(label_names), std::vector<double>{});
  CounterFamily& ref = *family;
  families_.push_back(std::move(family));
  if (ref.label_names().empty()) ref.with({});
  return ref;
}

GaugeFamily& Registry::add_gauge(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names) {
  std::lock_guard lock(mutex_);
  std::string full = prefix_ + std::string(name);
  check_new_name(full);
  auto family =
      std::make_unique<GaugeFamily>(std::move(full), std::string(help), MetricType::kGauge,
                                    std::move(label_names), std::vector<double>{});
  GaugeFamily& ref = *family;
  families_.push_back(std::move(family));
  if (ref.label_names().empty()) ref.with({});
  return ref;
}

HistogramFamily& Registry::add_histogram(std::string_view name, std::string_view help,
                                         std::vector<std::string> label_names,
                                         std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  std::string full = prefix_ + std::string(name);
  check_new_name(full);
  auto family =
      std::make_unique<HistogramFamily>(std::move(full), std::string(help), MetricType::kHistogram,
                                        std::move(label_names), std::move(bounds));
  HistogramFamily& ref = *family;
  families_.push_back(std::move(family));
  if (ref.label_names().empty()) ref.with({});
  return ref;
}

void Registry::add_collect_hook(std::function<void()> hook) {
  std::lock_guard lock(mutex_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::render() {
  std::lock_guard lock(mutex_);
  for (const auto& hook : hooks_) hook();
  std::string out;
  out.reserve(16384);
  for (const auto& family : families_) family->render(out);
  return out;
}

}  // namespace tally::metrics
