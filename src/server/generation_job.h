// One completions or chat request between the engine and the client: submits one engine
// request per prompt, turns the engine's events (posted to the I/O thread) into the
// response (one JSON body, or SSE chunks as tokens come), and ends the exchange when every
// engine request is done. A client that leaves cancels the engine requests at once, so their
// KV blocks are freed at the engine's next step.
//
// Lifetime: ServerContext::jobs owns it from start() to the end of the response; engine
// callbacks and the disconnect callback hold weak pointers (an event for a finished job is
// dropped). Every method runs on the I/O thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine_types.h"
#include "server/openai_response.h"
#include "server/server_context.h"
#include "tokenizer/utf8_stream.h"

namespace tally::server {

struct JobPrompt {
  std::vector<int32_t> tokens;
  std::string echo;          // text to put before the completion (completions' echo)
  int64_t queued_bytes = 0;  // charged against --max-queued-bytes until it runs
};

struct JobSpec {
  ResponseMeta meta;
  std::vector<JobPrompt> prompts;
  EngineRequest request;  // everything but the prompt, shared by all prompts
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  std::string rate_client;
  int64_t reserved_tokens = 0;  // taken from the client's token bucket at admission
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  GenerationJob(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange, JobSpec spec);
  ~GenerationJob();

  // Submits the engine requests; on a refusal answers the error (and cancels those already
  // submitted).
  void start();
  // Cancels every engine request still running (client gone, drain ran out of time).
  void abort();

 private:
  struct Choice {
    std::string text;  // all of it (not streamed), or what has not been sent yet
    tok::Utf8Stream utf8;
    TokenLogprobs logprobs;  // of the text not yet sent (streamed) or all (not streamed)
    size_t text_offset = 0;  // bytes already streamed
    FinishReason finish = FinishReason::kNone;
    int32_t completion_tokens = 0;
    int32_t spec_draft_tokens = 0;  // speculation: proposed for this choice, and accepted
    int32_t spec_accepted_tokens = 0;
  };
  struct Submission {
    RequestId id = -1;
    bool done = false;
    int64_t queued_bytes = 0;  // charged to ctx_.queued_bytes until its first event
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;  // of them, served by the prefix cache (from kFinished)
  };

  void release_queued_bytes(Submission& sub);
  void on_event(size_t slot, const EngineEvent& event);
  void on_token(Choice& choice, int32_t index, const EngineEvent& event);
  void on_finished(Choice& choice, int32_t index, const EngineEvent& event);
  void on_error(const Status& status);
  void begin_stream();
  void send(const StreamDelta& delta);
  void finish();
  Usage usage() const;
  std::string token_bytes(int32_t id) const;

  ServerContext& ctx_;
  std::shared_ptr<HttpExchange> exchange_;
  JobSpec spec_;
  std::vector<Submission> submissions_;
  std::vector<Choice> choices_;  // [prompt][n]
  bool streaming_ = false;       // the 200 and SSE headers are sent
  bool responded_ = false;       // an error answered the exchange already
  bool finished_ = false;
};

}  // namespace tally::server
