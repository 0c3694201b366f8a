#include "loadgen/load_runner.h"

#include <deque>
#include <memory>

#include "loadgen/progress_bar.h"
#include "loadgen/stream_recorder.h"

namespace tally::loadgen {

namespace {

// The history a conversation resends: text for completions, messages for chat.
struct ConversationState {
  std::string prompt_text;
  std::vector<ChatMessage> messages;
  size_t next_turn = 0;
};

class LoadRunner {
 public:
  LoadRunner(HttpClient& client, const LoadConfig& config, const Dataset& dataset)
      : client_(client), config_(config), dataset_(dataset), states_(dataset.conversations.size()) {
    int index = 0;
    for (size_t c = 0; c < dataset.conversations.size(); ++c) {
      first_index_.push_back(index);
      for (size_t t = 0; t < dataset.conversations[c].turns.size(); ++t) {
        RequestRecord r;
        r.index = index++;
        r.conversation = static_cast<int>(c);
        r.turn = static_cast<int>(t);
        r.expected_input_len = dataset.conversations[c].turns[t].text_len;
        r.requested_output_len = dataset.conversations[c].turns[t].output_len;
        run_.records.push_back(std::move(r));
      }
    }
  }

  LoadRun run(const std::vector<double>& arrivals, bool show_progress) {
    ProgressBar bar(config_.progress_label, static_cast<int>(run_.records.size()), show_progress);
    bar_ = &bar;
    start_ = Clock::now();
    for (size_t c = 0; c < states_.size(); ++c) {
      const auto at = start_ + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(arrivals[c]));
      client_.call_at(at, [this, c] { enqueue(c); });
    }
    client_.run();
    bar.finish();
    bar_ = nullptr;
    return std::move(run_);
  }

 private:
  void enqueue(size_t conversation) {
    pending_.push_back(conversation);
    pump();
  }

  void pump() {
    while (!pending_.empty() &&
           (config_.max_concurrency <= 0 || in_flight_ < config_.max_concurrency)) {
      const size_t c = pending_.front();
      pending_.pop_front();
      launch(c);
    }
  }

  RequestBodyParams body_for(size_t c) {
    const Conversation& conv = dataset_.conversations[c];
    ConversationState& s = states_[c];
    const DatasetTurn& turn = conv.turns[s.next_turn];
    RequestBodyParams p;
    p.model = config_.model;
    p.kind = config_.kind;
    p.max_tokens = turn.output_len;
    p.ignore_eos = config_.ignore_eos;
    p.temperature = config_.temperature;
    if (config_.kind == ApiKind::kChat) {
      if (!conv.system.empty()) p.messages.push_back({"system", conv.system});
      p.messages.insert(p.messages.end(), s.messages.begin(), s.messages.end());
      p.messages.push_back({"user", turn.text});
    } else {
      p.prompt = conv.system.empty() ? "" : conv.system + "\n\n";
      p.prompt += s.prompt_text + turn.text;
    }
    return p;
  }

  void launch(size_t c) {
    ConversationState& s = states_[c];
    RequestRecord& rec = run_.records[static_cast<size_t>(first_index_[c]) + s.next_turn];
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.path = config_.endpoint;
    spec.body = request_body(body_for(c));
    spec.api_key = config_.api_key;
    spec.timeout_s = config_.request_timeout_s;
    auto recorder = std::make_shared<StreamRecorder>(rec, config_.ignore_eos);
    HttpStreamHandlers h;
    h.on_status = [recorder](int status) { recorder->on_status(status); };
    h.on_body = [recorder](std::string_view b, Clock::time_point at) { recorder->on_body(b, at); };
    h.on_end = [this, recorder, c, &rec](const std::string& error) {
      recorder->on_end(error);
      finished(c, rec);
    };
    ++in_flight_;
    run_.max_in_flight = std::max(run_.max_in_flight, in_flight_);
    client_.start(spec, std::move(h), &recorder->sent());
    rec.send_s = std::chrono::duration<double>(recorder->sent() - start_).count();
  }

  void finished(size_t c, RequestRecord& rec) {
    --in_flight_;
    ++done_;
    if (!rec.success) ++failed_;
    run_.duration_s = std::chrono::duration<double>(Clock::now() - start_).count();
    ConversationState& s = states_[c];
    const Conversation& conv = dataset_.conversations[c];
    const DatasetTurn& turn = conv.turns[s.next_turn];
    s.prompt_text += turn.text + rec.generated_text + "\n\n";
    s.messages.push_back({"user", turn.text});
    s.messages.push_back({"assistant", rec.generated_text});
    ++s.next_turn;
    if (s.next_turn < conv.turns.size()) {
      if (rec.success) {
        enqueue(c);
      } else {  // the rest of a broken conversation is counted, not silently dropped
        for (; s.next_turn < conv.turns.size(); ++s.next_turn) {
          RequestRecord& r = run_.records[static_cast<size_t>(first_index_[c]) + s.next_turn];
          r.error = "not sent: an earlier turn of its conversation failed";
          ++done_;
          ++failed_;
        }
      }
    }
    if (bar_) bar_->update(done_, failed_);
    pump();
  }

  HttpClient& client_;
  const LoadConfig& config_;
  const Dataset& dataset_;
  std::vector<ConversationState> states_;
  std::vector<int> first_index_;
  LoadRun run_;
  std::deque<size_t> pending_;
  int in_flight_ = 0;
  int done_ = 0;
  int failed_ = 0;
  Clock::time_point start_{};
  ProgressBar* bar_ = nullptr;
};

// The first request of the dataset, alone: a wrong URL, key or model stops here, with the
// server's reason.
Status test_request(HttpClient& client, const LoadConfig& config, const Dataset& dataset) {
  Dataset one;
  one.conversations.push_back(dataset.conversations.front());
  one.conversations.back().turns.resize(1);
  LoadRun r = LoadRunner(client, config, one).run({0.0}, false);
  const RequestRecord& rec = r.records.front();
  if (!rec.success) {
    return make_error(ErrorCode::kIo, "the test request to {}{} failed: {}", client.url().text(),
                      config.endpoint, rec.error);
  }
  return Status::ok_status();
}

}  // namespace

Result<LoadRun> run_load(HttpClient& client, const LoadConfig& config, const Dataset& dataset) {
  if (dataset.conversations.empty() || dataset.conversations.front().turns.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "the dataset has no request");
  }
  TALLY_RETURN_IF_ERROR(client.resolve());
  TALLY_RETURN_IF_ERROR(test_request(client, config, dataset));
  if (config.num_warmups > 0) {
    Dataset warm;
    Conversation first = dataset.conversations.front();
    first.turns.resize(1);
    warm.conversations.assign(static_cast<size_t>(config.num_warmups), first);
    LoadConfig wc = config;
    wc.progress_label = "warm-up";
    LoadRunner(client, wc, warm)
        .run(std::vector<double>(warm.conversations.size(), 0.0), config.progress);
  }
  const auto arrivals =
      arrival_times(config.arrival, static_cast<int>(dataset.conversations.size()));
  return LoadRunner(client, config, dataset).run(arrivals, config.progress);
}

}  // namespace tally::loadgen
