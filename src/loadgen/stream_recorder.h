// Turns one streaming response into its RequestRecord as the bytes arrive: the HTTP status,
// SSE events timestamped by the read that delivered them, text, usage, and why it failed
// (status != 200, an error event, malformed SSE, a cut connection, no text at all).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loadgen/http_client.h"
#include "loadgen/request_record.h"
#include "loadgen/sse_parser.h"

namespace tally::loadgen {

class StreamRecorder {
 public:
  // `record` must outlive the recorder; `ignore_eos` decides what a short output means.
  StreamRecorder(RequestRecord& record, bool ignore_eos)
      : record_(record), ignore_eos_(ignore_eos) {}

  // The time the request was sent (set by HttpClient::start).
  Clock::time_point& sent() { return sent_; }
  void on_status(int status);
  void on_body(std::string_view bytes, Clock::time_point at);
  // Fills in the record; `transport_error` is HttpClient's ("" = the body arrived whole).
  void on_end(const std::string& transport_error);

 private:
  void on_event(const std::string& data, Clock::time_point at);
  void fail(std::string why);
  double since_sent(Clock::time_point at) const;

  RequestRecord& record_;
  bool ignore_eos_;
  Clock::time_point sent_{};
  Clock::time_point last_byte_{};
  SseParser sse_;
  std::vector<std::string> events_;
  std::string error_body_;  // the body of a non-200 answer
  bool done_ = false;       // "[DONE]" arrived
  int64_t chunks_with_text_ = 0;
};

}  // namespace tally::loadgen
