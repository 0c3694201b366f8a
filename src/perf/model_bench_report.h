// A ModelBenchResult for people (one aligned table with the ceilings beside the measured
// figures) and for programs (JSON with every sample statistic). `tally bench` prints one.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "perf/model_bench.h"

namespace tally::perf {

// What the report says about the model: its file name and shape.
struct ModelBenchLabel {
  std::string model;  // e.g. the GGUF file name
  std::string arch;
  int64_t n_layers = 0;
  int64_t n_embd = 0;
};

std::string model_bench_table(const ModelBenchResult& result, const ModelBenchLabel& label);
nlohmann::json model_bench_json(const ModelBenchResult& result, const ModelBenchLabel& label);

}  // namespace tally::perf
