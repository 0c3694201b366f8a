#include "loadgen/stream_recorder.h"

#include <fmt/format.h>

#include "loadgen/openai_protocol.h"

namespace tally::loadgen {

double StreamRecorder::since_sent(Clock::time_point at) const {
  return std::chrono::duration<double>(at - sent_).count();
}

void StreamRecorder::fail(std::string why) {
  if (record_.error.empty()) record_.error = std::move(why);
}

void StreamRecorder::on_status(int status) { record_.http_status = status; }

void StreamRecorder::on_body(std::string_view bytes, Clock::time_point at) {
  last_byte_ = at;
  if (record_.http_status != 200) {
    if (error_body_.size() < 4096) error_body_.append(bytes.substr(0, 4096));
    return;
  }
  events_.clear();
  sse_.feed(bytes, events_);
  if (sse_.malformed()) fail("malformed SSE: a line over 16 MiB");
  for (const auto& e : events_) on_event(e, at);
}

void StreamRecorder::on_event(const std::string& data, Clock::time_point at) {
  std::string parse_error;
  const StreamChunk chunk = parse_stream_chunk(data, parse_error);
  if (!parse_error.empty()) return fail(parse_error);
  if (chunk.done) {
    done_ = true;
    return;
  }
  if (!chunk.error.empty()) return fail("error event: " + chunk.error);
  if (chunk.prompt_tokens) record_.input_tokens = *chunk.prompt_tokens;
  if (chunk.completion_tokens) {
    record_.output_tokens = *chunk.completion_tokens;
    record_.usage_reported = true;
  }
  if (chunk.text.empty()) return;
  const double t = since_sent(at);
  if (record_.chunk_s.empty()) record_.ttft_s = t;
  record_.chunk_s.push_back(t);
  record_.generated_text += chunk.text;
  ++chunks_with_text_;
}

void StreamRecorder::on_end(const std::string& transport_error) {
  record_.e2e_s =
      last_byte_ == Clock::time_point{} ? since_sent(Clock::now()) : since_sent(last_byte_);
  if (!transport_error.empty()) fail(transport_error);
  if (record_.http_status != 0 && record_.http_status != 200) {
    fail(fmt::format("HTTP {}: {}", record_.http_status, error_message_of_body(error_body_)));
  }
  if (record_.error.empty() && sse_.has_partial_event()) fail("the stream ended inside an event");
  if (record_.error.empty() && !done_ && chunks_with_text_ == 0) {
    fail("the stream ended without [DONE] or any text");
  }
  if (record_.error.empty() && chunks_with_text_ == 0 && record_.requested_output_len > 0) {
    fail("no chunk carried text (TTFT cannot be measured)");
  }
  if (!record_.usage_reported) record_.output_tokens = chunks_with_text_;
  record_.success = record_.error.empty();
  record_.short_output =
      record_.success && ignore_eos_ && record_.output_tokens < record_.requested_output_len;
}

}  // namespace tally::loadgen
