// tally generate: prompt + completion to stdout as produced; timings to stderr.
#include <cstdio>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "model/model.h"
#include "plan/memory_size.h"
#include "plan/plan.h"
#include "runner/generator.h"
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
  std::string kv_type{dtype_name(plan::kDefaultKvType)};
  bool no_echo = false;
  bool parse_special = false;
  bool ignore_eos = false;
  bool print_ids = false;
  std::vector<std::string> stop;
};

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
  return StopMatcher::validate(a.stop);
}

int run_generate(GenerateArgs args) {
  if (Status st = check_args(args); !st.ok()) return report_error(st);
  auto kv_type = plan::kv_type_from_name(args.kv_type);
  if (!kv_type.ok()) return report_error(kv_type.status().with_context("--kv-type"));
  auto model = Model::load(args.model);
  if (!model.ok()) return report_error(model.status());
  const ModelConfig& config = (*model)->config();
  auto tokenizer = Tokenizer::from_gguf((*model)->gguf());
  if (!tokenizer.ok()) return report_error(tokenizer.status());
  const Tokenizer& tok = **tokenizer;
  if (Status st = args.sampling.validate(static_cast<int32_t>(config.n_vocab)); !st.ok()) return report_error(st);

  GenerateRequest request;
  request.prompt = tok.encode(args.prompt, /*add_special=*/true, args.parse_special);
  if (request.prompt.empty() && tok.bos() >= 0) request.prompt.push_back(tok.bos());
  if (request.prompt.empty()) {
    return report_error(make_error(ErrorCode::kInvalidArgument, "the prompt is empty and the model has no BOS token"));
  }
  const int64_t n_ctx = args.ctx_size > 0 ? args.ctx_size : config.context_length;
  if (static_cast<int64_t>(request.prompt.size()) > n_ctx) {
    return report_error(make_error(ErrorCode::kOutOfRange,
        "the prompt has {} tokens, more than the context of {} tokens", request.prompt.size(), n_ctx));
  }
  request.max_new_tokens = args.n_predict;
  request.sampling = args.sampling;
  request.ignore_eos = args.ignore_eos;
  // A sampled BOS starts a new document: generation ends there, as llama2.c's run.c does.
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.is_eog(id) || id == tok.bos()) request.stop_tokens.push_back(id);

  ThreadPool pool(args.threads);
  const int64_t max_context = std::min<int64_t>(n_ctx, request.prompt.size() + args.n_predict);
  Generator generator(**model, pool, static_cast<int32_t>(std::max<int64_t>(max_context, 1)),
                      args.batch_size, plan::kDefaultBlockSize, *kv_type);

  StreamingDetokenizer detok(tok);
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    std::string text = detok.push(request.prompt[i]);
    if (!args.no_echo) write_out(text);
  }
  StopMatcher stops(args.stop);
  std::vector<int32_t> sampled;
  auto result = generator.generate(request, [&](int32_t id) {
    sampled.push_back(id);
    auto update = stops.feed(detok.push(id));
    write_out(update.emit);
    return !update.stopped;
  });
  if (!result.ok()) return report_error(result.status());
  if (!stops.stopped()) {
    auto tail = stops.feed(detok.flush());
    write_out(tail.emit);
    write_out(stops.flush());
  }
  write_out("\n");

  const GenerateStats& s = *result;
  if (args.print_ids) {
    std::string ids;
    for (size_t i = 0; i < sampled.size(); ++i) ids += (i ? " " : "") + std::to_string(sampled[i]);
    fmt::print(stderr, "sampled ids: {}\n", ids);
  }
  const double decode_tps = s.n_generated > 1 && s.decode_seconds > 0 ? (s.n_generated - 1) / s.decode_seconds : 0.0;
  fmt::print(stderr,
             "prompt tokens: {}  TTFT: {:.2f} ms  prefill: {:.1f} tok/s  decode: {:.1f} tok/s "
             "({} tokens, {} threads, KV {} {}, finish: {})\n",
             s.n_prompt, s.ttft_seconds * 1e3, s.prefill_seconds > 0 ? s.n_prompt / s.prefill_seconds : 0.0,
             decode_tps, s.n_generated, pool.n_threads(), args.kv_type,
             plan::format_bytes(generator.kv_cache().bytes()), finish_reason_name(s.finish));
  return kExitOk;
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->model = default_model_path();
  args->sampling.seed = kRandomSeed;
  auto& p = args->sampling;
  app.add_option("-m,--model", args->model, "GGUF model file")->capture_default_str();
  app.add_option("-p,--prompt", args->prompt, "Prompt text (empty: start from BOS)")->capture_default_str();
  app.add_option("-n,--n-predict", args->n_predict, "Tokens to generate at most")->capture_default_str();
  app.add_option("--temp", p.temperature, "Temperature; 0 = greedy")->capture_default_str()->check(CLI::Range(0.0f, 100.0f));
  app.add_option("--top-k", p.top_k, "Keep the K most likely tokens; <= 0 = off")->capture_default_str();
  app.add_option("--top-p", p.top_p, "Nucleus sampling mass; 1 = off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--min-p", p.min_p, "Drop tokens below min-p x the top probability; 0 = off")->capture_default_str()->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--repeat-penalty", p.repetition_penalty, "Repetition penalty; 1 = off")->capture_default_str();
  app.add_option("--repeat-last-n", p.penalty_last_n, "Tokens the penalties look back over; -1 = all")->capture_default_str();
  app.add_option("--presence-penalty", p.presence_penalty, "OpenAI presence penalty")->capture_default_str();
  app.add_option("--frequency-penalty", p.frequency_penalty, "OpenAI frequency penalty")->capture_default_str();
  app.add_option("-s,--seed", p.seed, "RNG seed (default: random)");
  app.add_option("-t,--threads", args->threads, "Compute threads; 0 = one per core")->capture_default_str();
  app.add_option("-c,--ctx-size", args->ctx_size, "Context length; 0 = the model's")->capture_default_str();
  app.add_option("-b,--batch-size", args->batch_size, "Prompt tokens per forward pass")->capture_default_str();
  app.add_option("--kv-type", args->kv_type, "KV cache storage: f32, f16 or bf16")->capture_default_str();
  app.add_option("--stop", args->stop, "Stop when this text is generated (repeatable)");
  app.add_flag("--no-echo", args->no_echo, "Do not print the prompt");
  app.add_flag("--parse-special", args->parse_special, "Recognise special-token texts in the prompt");
  app.add_flag("--ignore-eos", args->ignore_eos, "Keep generating past end-of-generation tokens");
  app.add_flag("--print-ids", args->print_ids, "Print the sampled token ids to stderr");
  return [args] { return run_generate(*args); };
}

}  // namespace tally::cli
