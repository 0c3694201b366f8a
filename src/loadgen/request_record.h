// What the load generator measured about one request. Times are seconds on the steady clock:
// `send_s` from the start of the benchmark, the others from the request's own send time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tally::loadgen {

struct RequestRecord {
  int index = 0;                 // in sending order of the dataset (conversation-major)
  int conversation = 0;          // multi-turn: which conversation; else == index
  int turn = 0;                  // multi-turn: which turn of it
  int expected_input_len = 0;    // tokens of the prompt's new text, as the dataset measured
  int requested_output_len = 0;  // max_tokens
  double send_s = 0;             // connection attempt began, since the benchmark's start
  double ttft_s = 0;             // first chunk that carries text
  double e2e_s = 0;              // last byte of the response
  std::vector<double> chunk_s;   // arrival of every chunk that carries text
  int64_t input_tokens = 0;      // usage.prompt_tokens (0 when the server gave no usage)
  int64_t output_tokens = 0;     // usage.completion_tokens, else the chunks that carry text
  bool usage_reported = false;
  bool success = false;
  bool short_output = false;  // success, --ignore-eos, but fewer tokens than asked
  int http_status = 0;
  std::string error;           // why it failed ("" on success)
  std::string generated_text;  // the concatenated text of the chunks

  // Gaps between consecutive chunks that carry text (inter-token latencies).
  std::vector<double> itl_s() const;
  // (e2e - ttft) / (output tokens - 1); 0 when fewer than 2 tokens came.
  double tpot_s() const;
};

}  // namespace tally::loadgen
