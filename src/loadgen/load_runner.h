// Drives a benchmark against the server: conversations arrive on the schedule
// (arrival_schedule.h), wait for one of --max-concurrency slots, and stream; a multi-turn
// conversation sends its next turn (history + reply + new text) as soon as the previous one
// ends. One test request runs first (a run whose test fails stops with its reason), then the
// warm-ups (not recorded), then the measured requests.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/arrival_schedule.h"
#include "loadgen/dataset.h"
#include "loadgen/http_client.h"
#include "loadgen/openai_protocol.h"
#include "loadgen/request_record.h"

namespace tally::loadgen {

struct LoadConfig {
  std::string model;
  ApiKind kind = ApiKind::kCompletions;
  std::string endpoint = "/v1/completions";
  std::string api_key;
  int max_concurrency = 0;  // requests in flight at most; 0 = no limit
  ArrivalConfig arrival;
  bool ignore_eos = false;
  double temperature = 0.0;
  int num_warmups = 0;
  double request_timeout_s = 600;
  bool progress = false;  // a progress bar on stderr (when it is a terminal)
  std::string progress_label = "bench";
};

struct LoadRun {
  std::vector<RequestRecord> records;  // conversation-major order of the dataset
  double duration_s = 0;               // first send to last response
  int max_in_flight = 0;
};

Result<LoadRun> run_load(HttpClient& client, const LoadConfig& config, const Dataset& dataset);

}  // namespace tally::loadgen
