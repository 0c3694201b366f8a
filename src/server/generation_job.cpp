#include "server/generation_job.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

GenerationJob::GenerationJob(ServerContext& ctx, std::shared_ptr<HttpExchange> exchange,
                             JobSpec spec)
    : ctx_(ctx), exchange_(std::move(exchange)), spec_(std::move(spec)) {}

GenerationJob::~GenerationJob() {
  for (auto& sub : submissions_) release_queued_bytes(sub);
}

void GenerationJob::release_queued_bytes(Submission& sub) {
  ctx_.queued_bytes -= sub.queued_bytes;
  sub.queued_bytes = 0;
}

void GenerationJob::start() {
  ctx_.jobs.emplace(this, shared_from_this());
  const size_t n = static_cast<size_t>(spec_.request.n);
  choices_.resize(spec_.prompts.size() * n);
  submissions_.resize(spec_.prompts.size());
  exchange_->on_disconnect([weak = weak_from_this()] {
    if (auto job = weak.lock()) job->abort();
  });
  for (size_t slot = 0; slot < spec_.prompts.size(); ++slot) {
    EngineRequest request = spec_.request;
    request.prompt = spec_.prompts[slot].tokens;
    const auto prompt_tokens = static_cast<int32_t>(request.prompt.size());
    // Runs on the engine thread: hand the event to the I/O thread, never block.
    auto callback = [weak = weak_from_this(), slot, &io = ctx_.io,
                     observer = ctx_.observer](const EngineEvent& event) {
      if (observer) observer->on_engine_event(event);
      boost::asio::post(io, [weak, slot, event] {
        if (auto job = weak.lock()) job->on_event(slot, event);
      });
    };
    auto id = ctx_.engine.submit(std::move(request), std::move(callback));
    if (!id.ok()) {
      // Nothing was queued for this prompt nor the ones after it.
      for (size_t rest = slot; rest < submissions_.size(); ++rest) submissions_[rest].done = true;
      on_error(id.status());
      finish();  // when this was the first prompt; else when the others have ended
      return;
    }
    submissions_[slot].id = *id;
    submissions_[slot].prompt_tokens = prompt_tokens;
    submissions_[slot].queued_bytes = spec_.prompts[slot].queued_bytes;
    ctx_.queued_bytes += spec_.prompts[slot].queued_bytes;
  }
  if (spec_.stream) begin_stream();
}

void GenerationJob::abort() {
  for (const auto& s : submissions_) {
    if (!s.done && s.id >= 0) ctx_.engine.cancel(s.id);
  }
}

void GenerationJob::begin_stream() {
  streaming_ = true;
  exchange_->stream_begin(200, "text/event-stream");
  const bool chat = spec_.meta.kind == ApiKind::kChat;
  for (size_t i = 0; i < choices_.size(); ++i) {
    const std::string& echo = spec_.prompts[i / spec_.request.n].echo;
    if (!chat && echo.empty()) continue;
    StreamDelta delta;
    delta.index = static_cast<int32_t>(i);
    delta.role = chat;
    delta.text = chat ? "" : echo;
    send(delta);
    choices_[i].text_offset = delta.text.size();
  }
}

void GenerationJob::send(const StreamDelta& delta) {
  exchange_->stream_write(stream_chunk(spec_.meta, delta, spec_.include_usage,
                                       [this](int32_t id) { return token_bytes(id); }));
}

std::string GenerationJob::token_bytes(int32_t id) const {
  return ctx_.tokenizer.token_bytes(id, /*render_special=*/true);
}

void GenerationJob::on_event(size_t slot, const EngineEvent& event) {
  Submission& sub = submissions_[slot];
  release_queued_bytes(sub);  // it runs (or ended): the engine's ledger has it now
  if (sub.done || finished_) return;
  if (event.kind == EngineEventKind::kError) {
    sub.done = true;
    on_error(event.status);
  } else if (event.index >= 0 && event.index < spec_.request.n) {
    const int32_t index = static_cast<int32_t>(slot) * spec_.request.n + event.index;
    Choice& choice = choices_[static_cast<size_t>(index)];
    if (event.kind == EngineEventKind::kToken) {
      on_token(choice, index, event);
    } else {
      on_finished(choice, index, event);
      sub.cached_tokens = event.cached_tokens;
      if (event.request_done) sub.done = true;
    }
  }
  for (const auto& s : submissions_) {
    if (!s.done) return;
  }
  finish();
}

void GenerationJob::on_token(Choice& choice, int32_t index, const EngineEvent& event) {
  std::string text = choice.utf8.push(event.text);
  if (spec_.logprobs) choice.logprobs.add(event);
  ++choice.completion_tokens;
  if (!spec_.stream) {
    choice.text += text;
    return;
  }
  if (text.empty() && !spec_.logprobs) return;  // a character or stop string held back
  StreamDelta delta;
  delta.index = index;
  delta.text = std::move(text);
  delta.logprobs = spec_.logprobs ? &choice.logprobs : nullptr;
  delta.text_offset = choice.text_offset;
  send(delta);
  choice.text_offset += delta.text.size();
  choice.logprobs.clear();
}

void GenerationJob::on_finished(Choice& choice, int32_t index, const EngineEvent& event) {
  std::string text = choice.utf8.push(event.text);
  text += choice.utf8.finish();
  choice.finish = event.finish == FinishReason::kNone ? FinishReason::kStop : event.finish;
  choice.completion_tokens = event.completion_tokens;
  choice.spec_draft_tokens = event.spec_draft_tokens;
  choice.spec_accepted_tokens = event.spec_accepted_tokens;
  if (!spec_.stream) {
    choice.text += text;
    return;
  }
  StreamDelta delta;
  delta.index = index;
  delta.text = std::move(text);
  delta.finish = choice.finish;
  delta.text_offset = choice.text_offset;
  send(delta);
}

// An engine refusal or failure: the client gets the error (a status before any answer, an
// error event inside a stream), and the request's other prompts are cancelled.
void GenerationJob::on_error(const Status& status) {
  const ApiError error = api_error_from_status(status);
  exchange_->log().error = error.message;
  if (!responded_) {
    if (streaming_) {
      exchange_->stream_write(stream_error_chunk(api_error_json(error)));
    } else {
      exchange_->respond(api_error_response(error));
    }
  }
  responded_ = true;
  abort();
}

Usage GenerationJob::usage() const {
  Usage u;
  for (const auto& s : submissions_) {
    u.prompt_tokens += s.prompt_tokens;
    u.cached_tokens += s.cached_tokens;
  }
  for (const auto& c : choices_) u.completion_tokens += c.completion_tokens;
  return u;
}

void GenerationJob::finish() {
  for (const auto& s : submissions_) {
    if (!s.done) return;
  }
  if (finished_) return;
  finished_ = true;
  const Usage u = usage();
  exchange_->log().prompt_tokens = static_cast<int32_t>(u.prompt_tokens);
  exchange_->log().completion_tokens = static_cast<int32_t>(u.completion_tokens);
  for (const auto& c : choices_) {
    exchange_->log().spec_draft_tokens += c.spec_draft_tokens;
    exchange_->log().spec_accepted_tokens += c.spec_accepted_tokens;
  }
  ctx_.rate_limiter.settle(spec_.rate_client, spec_.reserved_tokens,
                           u.prompt_tokens + u.completion_tokens);
  if (streaming_) {
    if (spec_.include_usage) exchange_->stream_write(stream_usage_chunk(spec_.meta, u));
    exchange_->stream_write(kSseDone);
    exchange_->stream_end();
  } else if (!responded_) {
    std::vector<ChoiceResult> results(choices_.size());
    for (size_t i = 0; i < choices_.size(); ++i) {
      results[i].index = static_cast<int32_t>(i);
      results[i].text = spec_.prompts[i / spec_.request.n].echo + choices_[i].text;
      results[i].finish = choices_[i].finish;
      if (spec_.logprobs) results[i].logprobs = std::move(choices_[i].logprobs);
    }
    HttpResponse response;
    response.body =
        response_body(spec_.meta, results, u, [this](int32_t id) { return token_bytes(id); });
    exchange_->respond(std::move(response));
  }
  auto self = shared_from_this();  // erasing drops the map's reference
  ctx_.jobs.erase(this);
}

}  // namespace tally::server
