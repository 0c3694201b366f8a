// tally generate: one request on the engine core (EngineCore, stepped on this thread); prompt
// + completion to stdout as produced, timings to stderr.
#include <cstdio>

#include <fmt/format.h>

#include "chat_session.h"
#include "cli_common.h"
#include "commands.h"
#include "engine/engine_core.h"
#include "engine/engine_flags.h"
#include "model/generation_config.h"
#include "model/model.h"
#include "plan/memory_size.h"
#include "plan/plan.h"
#include "sampling/stop_matcher.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  int32_t n_predict = 256;
  SamplingParams sampling;
  int threads = 0;
  int32_t ctx_size = 0;
  int32_t batch_size = plan::kDefaultBatchTokens;
  KvTypeFlags kv_type;
  bool no_echo = false;
  bool parse_special = false;
  bool ignore_eos = false;
  bool print_ids = false;
  std::vector<std::string> stop;
  bool chat = false;
  std::string chat_template;
  bool no_prefix_cache = false;
  SpecFlags spec;
  std::string generation_config = "auto";
  // The sampling flags, to tell which were given (a given flag beats the model's default).
  CLI::Option* temp_flag = nullptr;
  CLI::Option* top_k_flag = nullptr;
  CLI::Option* top_p_flag = nullptr;
  CLI::Option* min_p_flag = nullptr;
  CLI::Option* repeat_penalty_flag = nullptr;
  CLI::Option* repeat_last_n_flag = nullptr;
};

// The model's default sampling (--generation-config) under the sampling flags that were given.
Status apply_model_sampling(GenerateArgs& a, const io::GgufFile& model) {
  TALLY_ASSIGN_OR_RETURN(SamplingDefaults d, resolve_generation_config(a.generation_config, &model));
  auto given = [](const CLI::Option* o) { return o != nullptr && o->count() > 0; };
  if (given(a.temp_flag)) d.temperature.reset();
  if (given(a.top_k_flag)) d.top_k.reset();
  if (given(a.top_p_flag)) d.top_p.reset();
  if (given(a.min_p_flag)) d.min_p.reset();
  if (given(a.repeat_penalty_flag)) d.repetition_penalty.reset();
  if (given(a.repeat_last_n_flag)) d.penalty_last_n.reset();
  d.apply_to(a.sampling);
  if (!d.empty()) fmt::print(stderr, "default sampling from the model's generation config: {}\n", d.describe());
  return Status::ok_status();
}

int run_chat_command(const GenerateArgs& a, std::unique_ptr<Model> model,
                     std::unique_ptr<Tokenizer> tok, KvTypes kv_type) {
  ChatOptions options{a.prompt, a.chat_template, {}, a.stop, a.threads, a.ctx_size, a.batch_size, kv_type};
  options.turn.max_tokens = a.n_predict;
  options.turn.sampling = a.sampling;
  options.turn.ignore_eos = a.ignore_eos;
  options.prefix_cache = !a.no_prefix_cache;
  return run_chat(std::move(model), std::move(tok), options);
}

void write_out(std::string_view s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

Status check_args(const GenerateArgs& a) {
  if (a.n_predict < 0) return make_error(ErrorCode::kInvalidArgument, "-n must be >= 0, got {}", a.n_predict);
  if (a.threads < 0) return make_error(ErrorCode::kInvalidArgument, "--threads must be >= 0, got {}", a.threads);
  if (a.ctx_size < 0) return make_error(ErrorCode::kInvalidArgument, "--ctx-size must be >= 0, got {}", a.ctx_size);
  if (a.batch_size < 1) return make_error(ErrorCode::kInvalidArgument, "--batch-size must be >= 1, got {}", a.batch_size);
  return StopSet::validate(a.stop);
}

// A KV pool just large enough for this prompt and -n tokens (as the timing line reports).
EngineConfig generate_engine_config(const GenerateArgs& args, const ModelConfig& model,
                                    KvTypes kv_type, int64_t n_prompt, const SpecConfig& spec) {
  const int64_t n_ctx = args.ctx_size > 0 ? args.ctx_size : model.context_length;
  EngineConfig c = single_sequence_engine_config(
      model, {args.threads, args.batch_size, args.ctx_size,
              std::min<int64_t>(n_ctx, n_prompt + args.n_predict), kv_type});
  c.model_path = args.model;
  c.prefix_cache = !args.no_prefix_cache;
  c.spec = spec;
  return c;
}

// What `tally generate` prints as the completion comes: text to stdout, the rest kept for the
// timing line.
struct GenerateOutput {
  std::vector<int32_t> sampled;  // stop token excluded
  EngineEvent end;
  Status error;

  void on_event(const EngineEvent& e) {
    if (e.kind == EngineEventKind::kToken) {
      sampled.push_back(e.token);
      write_out(e.text);
      return;
    }
    if (e.kind == EngineEventKind::kError) {
      error = e.status;
    } else {
      write_out(e.text);
      end = e;
    }
  }
};

const char* finish_name(const EngineEvent& end, int32_t n_predict) {
  if (end.finish == FinishReason::kLength && end.completion_tokens < n_predict) return "context";
  return end.finish == FinishReason::kStop ? "stop" : "length";
}

int run_generate(GenerateArgs args) {
  if (Status st = check_args(args); !st.ok()) return report_error(st);
  auto kv_type = kv_type_flags_parse(args.kv_type);
  if (!kv_type.ok()) return report_error(kv_type.status());
  auto spec = spec_flags_to_config(args.spec);
  if (!spec.ok()) return report_error(spec.status());
  auto model = load_model(args.model);
  if (!model.ok()) return report_error(model.status());
  if (Status st = apply_model_sampling(args, (*model)->gguf()); !st.ok()) return report_error(st);
  auto tokenizer = Tokenizer::from_gguf((*model)->gguf());
  if (!tokenizer.ok()) return report_error(tokenizer.status());
  const Tokenizer& tok = **tokenizer;
  if (args.chat) return run_chat_command(args, std::move(*model), std::move(*tokenizer), *kv_type);

  EngineRequest request;
  request.prompt = tok.encode(args.prompt, /*add_special=*/true, args.parse_special);
  if (request.prompt.empty() && tok.bos() >= 0) request.prompt.push_back(tok.bos());
  if (request.prompt.empty()) {
    return report_error(make_error(ErrorCode::kInvalidArgument, "the prompt is empty and the model has no BOS token"));
  }
  request.max_tokens = std::max(1, args.n_predict);  // -n 0: checked, then not run
  request.sampling = args.sampling;
  request.ignore_eos = args.ignore_eos;
  request.stop = args.stop;
  const EngineConfig config = generate_engine_config(
      args, (*model)->config(), *kv_type, static_cast<int64_t>(request.prompt.size()), *spec);
  auto core = EngineCore::create(config, std::move(*model), std::move(*tokenizer));
  if (!core.ok()) return report_error(core.status());
  EngineCore& engine = **core;
  if (Status st = engine.check_request(request); !st.ok()) return report_error(st);

  StreamingDetokenizer echo(engine.tokenizer());
  for (int32_t id : request.prompt) {
    std::string text = echo.push(id);
    if (!args.no_echo) write_out(text);
  }
  const auto n_prompt = static_cast<int32_t>(request.prompt.size());
  GenerateOutput out;
  if (args.n_predict > 0) {
    engine.add_request(1, std::move(request), resolve_seed(args.sampling.seed),
                       [&out](const EngineEvent& e) { out.on_event(e); }, EngineClock::now());
    while (engine.has_unfinished()) engine.step();
    if (!out.error.ok()) return report_error(out.error);
  }
  write_out("\n");

  if (args.print_ids) {
    std::string ids;
    for (size_t i = 0; i < out.sampled.size(); ++i) ids += (i ? " " : "") + std::to_string(out.sampled[i]);
    fmt::print(stderr, "sampled ids: {}\n", ids);
  }
  const RequestTiming& t = out.end.timing;
  const auto n_generated = static_cast<int32_t>(out.sampled.size());
  const double decode_tps = n_generated > 1 && t.decode_seconds > 0 ? (n_generated - 1) / t.decode_seconds : 0.0;
  fmt::print(stderr,
             "prompt tokens: {}  TTFT: {:.2f} ms  prefill: {:.1f} tok/s  decode: {:.1f} tok/s "
             "({} tokens, {} threads, KV {} {}, finish: {})\n",
             n_prompt, t.ttft_seconds * 1e3, t.prefill_seconds > 0 ? n_prompt / t.prefill_seconds : 0.0,
             decode_tps, n_generated, engine.n_threads(), kv_types_name(config.kv_type),
             plan::format_bytes(engine.ledger().kv_bytes), finish_name(out.end, args.n_predict));
  if (engine.config().spec.enabled()) {
    const EngineEvent& e = out.end;
    fmt::print(stderr, "speculative ({}): {} draft tokens, {} accepted ({:.1f}%), {} steps\n",
               spec_mode_name(engine.config().spec.mode), e.spec_draft_tokens,
               e.spec_accepted_tokens,
               e.spec_draft_tokens > 0 ? 100.0 * e.spec_accepted_tokens / e.spec_draft_tokens : 0.0,
               engine.metrics().steps_total);
  }
  return kExitOk;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->model = default_model_path();
  args->sampling.seed = kRandomSeed;
  auto& p = args->sampling;
  app.add_option("-m,--model", args->model, "GGUF model file or Hugging Face model directory")->capture_default_str();
  app.add_option("-p,--prompt", args->prompt, "Prompt text (empty: start from BOS)")->capture_default_str();
  app.add_option("-n,--n-predict", args->n_predict, "Tokens to generate at most")->capture_default_str();
  args->temp_flag = app.add_option("--temp", p.temperature, "Temperature; 0 = greedy")->capture_default_str()->check(CLI::Range(0.0f, 100.0f));
  args->top_k_flag = app.add_option("--top-k", p.top_k, "Keep the K most likely tokens; <= 0 = off")->capture_default_str();
  args->top_p_flag = app.add_option("--top-p", p.top_p, "Nucleus sampling mass; 1 = off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  args->min_p_flag = app.add_option("--min-p", p.min_p, "Drop tokens below min-p x the top probability; 0 = off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  args->repeat_penalty_flag = app.add_option("--repeat-penalty", p.repetition_penalty, "Repetition penalty; 1 = off")->capture_default_str();
  args->repeat_last_n_flag = app.add_option("--repeat-last-n", p.penalty_last_n, "Tokens the penalties look back over; -1 = all")->capture_default_str();
  app.add_option("--generation-config", args->generation_config,
                 "Default sampling: 'auto' = the model's (generation_config.json / general.sampling.*) "
                 "where no sampling flag is given, 'none' = these flags' defaults, or a directory with a "
                 "generation_config.json")->capture_default_str();
  app.add_option("--presence-penalty", p.presence_penalty, "OpenAI presence penalty")->capture_default_str();
  app.add_option("--frequency-penalty", p.frequency_penalty, "OpenAI frequency penalty")->capture_default_str();
  app.add_option("-s,--seed", p.seed, "RNG seed (default: random)");
  app.add_option("-t,--threads", args->threads, "Compute threads; 0 = one per core")->capture_default_str();
  app.add_option("-c,--ctx-size", args->ctx_size, "Context length; 0 = the model's")->capture_default_str();
  app.add_option("-b,--batch-size", args->batch_size, "Prompt tokens per forward pass")->capture_default_str();
  kv_type_flags_add(app, args->kv_type);
  app.add_option("--stop", args->stop, "Stop when this text is generated (repeatable)");
  app.add_flag("--no-echo", args->no_echo, "Do not print the prompt");
  app.add_flag("--parse-special", args->parse_special, "Recognise special-token texts in the prompt");
  app.add_flag("--ignore-eos", args->ignore_eos, "Keep generating past end-of-generation tokens");
  app.add_flag("--print-ids", args->print_ids, "Print the sampled token ids to stderr");
  app.add_flag("--no-prefix-cache", args->no_prefix_cache,
               "--chat: recompute the whole history each turn instead of reusing its cached KV");
  spec_flags_add(app, args->spec);
  app.add_flag("--chat", args->chat, "Interactive multi-turn chat on stdin/stdout (-p: the system message)");
  app.add_option("--chat-template", args->chat_template,
                 "Jinja chat template file for --chat (default: the model's, else plain User:/Assistant:)");
  return [args] { return run_generate(*args); };
}

}  // namespace tally::cli
