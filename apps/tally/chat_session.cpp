#include "chat_session.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli_common.h"
#include "engine/engine_core.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "sampling/stop_matcher.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

namespace {

// For models without a chat template (the bundled stories260K): a transcript the model can
// continue. The answer stops where the model starts the next "User:" line.
constexpr const char* kPlainTemplate =
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{ message['content'] + '\\n\\n' }}"
    "{%- elif message['role'] == 'user' -%}{{ 'User: ' + message['content'] + '\\n' }}"
    "{%- else -%}{{ 'Assistant: ' + message['content'] + '\\n' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'Assistant:' }}{%- endif -%}";
constexpr const char* kPlainTemplateStop = "\nUser:";

// Set by SIGINT while the chat runs: stops the answer being generated.
volatile sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

struct ChatTemplateChoice {
  ChatTemplate tmpl;
  bool plain = false;        // the built-in transcript: its text has no special tokens
  std::string description;   // for the banner
};

Result<ChatTemplateChoice> choose_template(const Model& model, const std::string& path) {
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, "--chat-template: cannot read '{}'", path);
    std::stringstream text;
    text << in.rdbuf();
    auto tmpl = ChatTemplate::from_source(text.str());
    if (!tmpl.ok()) return tmpl.status().with_context(fmt::format("--chat-template {}", path));
    return ChatTemplateChoice{std::move(*tmpl), false, path};
  }
  auto from_model = ChatTemplate::from_gguf(model.gguf());
  if (from_model.ok() && !from_model->is_builtin())
    return ChatTemplateChoice{std::move(*from_model), false, "the model's chat template"};
  if (!from_model.ok())
    fmt::print(stderr, "tally: the model's chat template is unusable ({}); using a plain one\n",
               from_model.status().message());
  auto plain = ChatTemplate::from_source(kPlainTemplate);
  if (!plain.ok()) return plain.status();
  return ChatTemplateChoice{std::move(*plain), true, "a plain User:/Assistant: transcript"};
}

// The answer as the conversation keeps it: the template puts its own space after "Assistant:".
std::string trim_spaces(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return {};
  return std::string(s.substr(begin, s.find_last_not_of(" \t\n") - begin + 1));
}

enum class ReadStatus { kLine, kInterrupted, kEnd };

// One line of stdin without its newline. Ctrl-C at the prompt discards the line typed so far.
ReadStatus read_line(std::string& line) {
  char* buf = nullptr;
  size_t cap = 0;
  errno = 0;
  const ssize_t n = ::getline(&buf, &cap, stdin);
  const int err = errno;
  if (n >= 0) line.assign(buf, static_cast<size_t>(n));
  std::free(buf);
  if (n < 0) {
    std::clearerr(stdin);
    return err == EINTR ? ReadStatus::kInterrupted : ReadStatus::kEnd;
  }
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return ReadStatus::kLine;
}

class ChatSession {
 public:
  ChatSession(EngineCore& engine, const ChatOptions& options, ChatTemplateChoice choice, int64_t n_ctx)
      : engine_(engine), tok_(engine.tokenizer()), options_(options), choice_(std::move(choice)),
        ctx_(ChatTemplateContext::from_tokenizer(tok_)), n_ctx_(n_ctx) {
    stops_ = options.stop;
    if (choice_.plain) stops_.push_back(kPlainTemplateStop);
    reset();
  }

  int run();

 private:
  void reset() {
    messages_.clear();
    if (!options_.system_prompt.empty()) messages_.push_back({"system", options_.system_prompt, {}});
  }
  Result<std::vector<int32_t>> prompt_tokens() const;
  Result<std::vector<int32_t>> fitted_prompt();
  Status answer();

  EngineCore& engine_;
  const Tokenizer& tok_;
  const ChatOptions& options_;
  ChatTemplateChoice choice_;
  ChatTemplateContext ctx_;
  int64_t n_ctx_;
  RequestId next_id_ = 1;
  std::vector<std::string> stops_;
  std::vector<ChatMessage> messages_;
};

Result<std::vector<int32_t>> ChatSession::prompt_tokens() const {
  auto text = choice_.tmpl.render(messages_, /*add_generation_prompt=*/true, ctx_);
  if (!text.ok()) return text.status();
  if (choice_.plain) return tok_.encode(*text, /*add_special=*/true, /*parse_special=*/false);
  // A template writes its own special tokens (bos_token included, for most).
  std::vector<int32_t> ids = tok_.encode(*text, /*add_special=*/false, /*parse_special=*/true);
  const bool has_bos_text = !ctx_.bos_token.empty() && text->starts_with(ctx_.bos_token);
  if (tok_.add_bos() && tok_.bos() >= 0 && !has_bos_text) ids.insert(ids.begin(), tok_.bos());
  return ids;
}

// The conversation's tokens, dropping the oldest exchanges until it leaves room to answer.
Result<std::vector<int32_t>> ChatSession::fitted_prompt() {
  for (;;) {
    auto ids = prompt_tokens();
    if (!ids.ok()) return ids.status();
    if (static_cast<int64_t>(ids->size()) < n_ctx_) return ids;
    const size_t first = !messages_.empty() && messages_.front().role == "system" ? 1 : 0;
    if (messages_.size() - first <= 1) {
      return make_error(ErrorCode::kOutOfRange, "the message is {} tokens, the context holds {}",
                        ids->size(), n_ctx_);
    }
    messages_.erase(messages_.begin() + first, messages_.begin() + first + 2);
    fmt::print(stderr, "[context full: the oldest exchange is forgotten]\n");
  }
}

Status ChatSession::answer() {
  auto prompt = fitted_prompt();
  if (!prompt.ok()) return prompt.status();
  EngineRequest request = options_.turn;
  request.max_tokens = static_cast<int32_t>(
      std::min<int64_t>(request.max_tokens, n_ctx_ - static_cast<int64_t>(prompt->size())));
  request.prompt = std::move(*prompt);
  request.stop = stops_;  // the engine stops at end-of-generation tokens and BOS itself
  if (Status st = engine_.check_request(request); !st.ok()) return st;
  std::string reply;
  Status error;
  auto on_event = [&](const EngineEvent& e) {
    if (e.kind == EngineEventKind::kError) {
      error = e.status;
      return;
    }
    write_stdout(e.text);
    reply += e.text;
  };
  const RequestId id = next_id_++;
  const uint64_t seed = resolve_seed(request.sampling.seed);
  g_interrupted = 0;
  engine_.add_request(id, std::move(request), seed, on_event, EngineClock::now());
  bool aborted = false;
  while (engine_.has_unfinished()) {
    if (g_interrupted && !aborted) {
      engine_.abort_request(id);
      aborted = true;
    }
    engine_.step();
  }
  if (!error.ok()) return error;
  write_stdout("\n");
  if (aborted) fmt::print(stderr, "[stopped]\n");
  messages_.push_back({"assistant", trim_spaces(reply), {}});
  return Status::ok_status();
}

int ChatSession::run() {
  const bool interactive = ::isatty(STDIN_FILENO);
  if (interactive) {
    fmt::print(stderr, "tally chat: {} ({} tokens of context). Ctrl-C stops an answer; /reset "
               "forgets the conversation; /exit or Ctrl-D quits.\n", choice_.description, n_ctx_);
  }
  std::string line;
  for (;;) {
    if (interactive) write_stdout("> ");
    const ReadStatus status = read_line(line);
    if (status == ReadStatus::kEnd) break;
    if (status == ReadStatus::kInterrupted) {
      write_stdout("\n");
      continue;
    }
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      reset();
      continue;
    }
    if (line.empty()) continue;
    messages_.push_back({"user", line, {}});
    if (Status st = answer(); !st.ok()) {
      messages_.pop_back();
      if (st.code() != ErrorCode::kOutOfRange && st.code() != ErrorCode::kInvalidArgument)
        return report_error(st);
      report_error(st);  // this message cannot be answered; the chat goes on
    }
  }
  if (interactive) write_stdout("\n");
  return kExitOk;
}

}  // namespace

int run_chat(std::unique_ptr<Model> model, std::unique_ptr<Tokenizer> tokenizer,
             const ChatOptions& options) {
  auto choice = choose_template(*model, options.template_path);
  if (!choice.ok()) return report_error(choice.status());
  if (Status st = StopSet::validate(options.stop); !st.ok()) return report_error(st);
  if (Status st = options.turn.sampling.validate(static_cast<int32_t>(model->config().n_vocab));
      !st.ok()) {
    return report_error(st);
  }
  // The model holds positions up to its context_length: -c can only lower that.
  const int64_t model_ctx = model->config().context_length;
  const int64_t n_ctx = options.ctx_size > 0 ? std::min<int64_t>(options.ctx_size, model_ctx) : model_ctx;
  EngineConfig config = single_sequence_engine_config(
      model->config(), {options.threads, options.batch_size, static_cast<int32_t>(n_ctx), n_ctx, options.kv_type});
  config.prefix_cache = options.prefix_cache;
  auto engine = EngineCore::create(config, std::move(model), std::move(tokenizer));
  if (!engine.ok()) return report_error(engine.status());

  // No SA_RESTART: Ctrl-C interrupts the read at the prompt, so the line can be discarded.
  struct sigaction action {}, previous {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous);
  int status = ChatSession(**engine, options, std::move(*choice), n_ctx).run();
  ::sigaction(SIGINT, &previous, nullptr);
  return status;
}

}  // namespace tally::cli
