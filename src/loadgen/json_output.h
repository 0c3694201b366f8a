// The JSON of a run (--json): every figure of the report under vLLM's key names (mean_ttft_ms,
// p99_tpot_ms, output_throughput, ...; ttfts and itls in seconds, as vLLM writes them) and
// one record per request under "requests". A sweep writes {"sweep": [run, ...]}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/report.h"
#include "loadgen/request_record.h"
#include "loadgen/summary.h"

namespace tally::loadgen {

nlohmann::json run_json(const RunInfo& info, const BenchSummary& s,
                        const std::vector<RequestRecord>& records);

// Writes `j` to `path` (pretty-printed); an error names the file.
Status write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace tally::loadgen
