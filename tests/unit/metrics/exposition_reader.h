// A small reader of the Prometheus text format for the tests: splits an exposition into its
// TYPE declarations and samples, so checks do not depend on the writer's own code.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tally_test {

struct Sample {
  std::string name;  // e.g. tally:e2e_request_latency_seconds_bucket
  std::vector<std::pair<std::string, std::string>> labels;  // in order, values unescaped
  std::string value;                                        // as written
  std::string label(const std::string& key) const;          // "" when absent
  std::string labels_without_le() const;  // a key for the series a bucket belongs to
};

struct Exposition {
  std::map<std::string, std::string> types;  // metric family -> "counter", "gauge", ...
  std::map<std::string, std::string> help;
  std::vector<Sample> samples;
  std::string error;  // first malformed line, if any
  // Samples of one name, in order.
  std::vector<Sample> named(const std::string& name) const;
};

Exposition read_exposition(const std::string& text);

}  // namespace tally_test
