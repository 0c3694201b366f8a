// tally bench serve: load-tests any OpenAI-compatible server (tally serve, llama-server,
// vLLM) with the same method, under vLLM bench serve's flag names. The load generator is
// src/loadgen/; this file declares the flags and runs it. docs/bench_serve.md.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_common.h"
#include "commands.h"
#include "loadgen/dataset.h"
#include "loadgen/json_output.h"
#include "loadgen/load_runner.h"
#include "loadgen/openai_protocol.h"
#include "loadgen/report.h"
#include "loadgen/serving_plots.h"
#include "loadgen/sharegpt_dataset.h"

namespace tally::cli {

namespace {

using namespace tally::loadgen;

struct ServeBenchArgs {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint;  // default from --backend
  std::string backend = "openai";
  std::string model;
  std::string api_key;
  std::string dataset_name = "random";
  std::string dataset_path;
  SyntheticConfig synthetic;
  int sharegpt_output_len = 0;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int max_concurrency = 0;
  bool ignore_eos = false;
  double temperature = 0.0;
  int num_warmups = 0;
  double request_timeout = 600;
  std::optional<double> slo_ttft_ms;
  std::optional<double> slo_tpot_ms;
  std::vector<std::string> goodput;
  std::string percentile_metrics = "ttft,tpot,itl,e2el";
  std::string metric_percentiles = "50,90,99";
  std::string json_path;
  std::string plot_path;
  std::string sweep;
  bool no_progress = false;
};

// What the flags come to once checked.
struct ServePlan {
  BaseUrl url;
  LoadConfig load;
  Slo slo;
  std::vector<double> rates;
  RunInfo info;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<double> parse_number(const std::string& flag, const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || std::isnan(v)) {
    return make_error(ErrorCode::kInvalidArgument, "{} '{}' is not a number > 0 (or inf)", flag,
                      text);
  }
  return v;
}

Status resolve_slo(const ServeBenchArgs& a, Slo& slo) {
  slo.ttft_ms = a.slo_ttft_ms;
  slo.tpot_ms = a.slo_tpot_ms;
  for (const auto& g : a.goodput) {  // vLLM's "ttft:500 tpot:50 e2el:2000" (ms)
    const size_t colon = g.find(':');
    const std::string key = g.substr(0, colon);
    TALLY_ASSIGN_OR_RETURN(
        double v,
        parse_number("--goodput " + key, colon == std::string::npos ? "" : g.substr(colon + 1)));
    if (key == "ttft")
      slo.ttft_ms = v;
    else if (key == "tpot")
      slo.tpot_ms = v;
    else if (key == "e2el")
      slo.e2el_ms = v;
    else
      return make_error(ErrorCode::kInvalidArgument,
                        "--goodput '{}': use ttft:MS, tpot:MS or e2el:MS", g);
  }
  return Status::ok_status();
}

Status resolve_report(const ServeBenchArgs& a, RunInfo& info) {
  info.metrics = split_list(a.percentile_metrics);
  for (const auto& m : info.metrics) {
    if (m != "ttft" && m != "tpot" && m != "itl" && m != "e2el") {
      return make_error(ErrorCode::kInvalidArgument,
                        "--percentile-metrics: unknown metric '{}' (ttft, tpot, itl, e2el)", m);
    }
  }
  info.percentiles.clear();
  for (const auto& p : split_list(a.metric_percentiles)) {
    char* end = nullptr;
    const double q = std::strtod(p.c_str(), &end);
    if (*end != '\0' || !(q >= 0 && q <= 100)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--metric-percentiles: '{}' is not in [0, 100]", p);
    }
    info.percentiles.push_back(q);
  }
  return Status::ok_status();
}

Result<ServePlan> resolve(ServeBenchArgs& a) {
  ServePlan plan;
  TALLY_ASSIGN_OR_RETURN(plan.url, parse_base_url(a.base_url));
  if (a.backend == "openai-chat") {
    if (a.endpoint.empty()) a.endpoint = "/v1/chat/completions";
  } else if (a.backend == "openai" || a.backend == "vllm" || a.backend == "sglang" ||
             a.backend == "llama.cpp" || a.backend == "lmdeploy") {
    if (a.endpoint.empty()) a.endpoint = "/v1/completions";
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "--backend '{}': use openai (completions) or openai-chat", a.backend);
  }
  if (a.endpoint.empty() || a.endpoint[0] != '/') a.endpoint = "/" + a.endpoint;
  const bool chat = a.endpoint.find("chat/completions") != std::string::npos;
  const std::string& d = a.dataset_name;
  if (d != "random" && d != "shared-prefix" && d != "multi-turn" && d != "repeat" &&
      d != "sharegpt") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--dataset-name '{}': use random, shared-prefix, multi-turn, repeat or "
                      "sharegpt",
                      d);
  }
  if (d == "sharegpt" && a.dataset_path.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "--dataset-name sharegpt needs --dataset-path");
  }
  if (a.synthetic.range_ratio < 0 || a.synthetic.range_ratio >= 1) {
    return make_error(ErrorCode::kInvalidArgument, "--random-range-ratio {} is not in [0, 1)",
                      a.synthetic.range_ratio);
  }
  if (a.burstiness <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "--burstiness {} must be > 0", a.burstiness);
  }
  if (!a.plot_path.empty()) TALLY_RETURN_IF_ERROR(check_plot_path(a.plot_path));
  const std::string rates = a.sweep.empty() ? a.request_rate : a.sweep;
  for (const auto& r : split_list(rates)) {
    TALLY_ASSIGN_OR_RETURN(double v,
                           parse_number(a.sweep.empty() ? "--request-rate" : "--sweep", r));
    plan.rates.push_back(v);
  }
  if (plan.rates.empty()) return make_error(ErrorCode::kInvalidArgument, "--sweep lists no rate");
  TALLY_RETURN_IF_ERROR(resolve_slo(a, plan.slo));
  TALLY_RETURN_IF_ERROR(resolve_report(a, plan.info));
  if (a.api_key.empty()) {
    if (const char* env = std::getenv("OPENAI_API_KEY"); env) a.api_key = env;
  }
  LoadConfig& l = plan.load;
  l.kind = chat ? ApiKind::kChat : ApiKind::kCompletions;
  l.endpoint = a.endpoint;
  l.api_key = a.api_key;
  l.max_concurrency = a.max_concurrency;
  l.arrival.burstiness = a.burstiness;
  l.arrival.seed = a.synthetic.seed;
  l.ignore_eos = a.ignore_eos;
  l.temperature = a.temperature;
  l.num_warmups = a.num_warmups;
  l.request_timeout_s = a.request_timeout;
  l.progress = !a.no_progress;
  if (d == "shared-prefix" && a.synthetic.prefix_len == 0) a.synthetic.prefix_len = 256;
  a.synthetic.name = d;
  return plan;
}

// --model, or the first name GET /v1/models lists (its max_model_len too, when given).
Status resolve_model(HttpClient& client, const ServeBenchArgs& a, std::string& model,
                     int& max_model_len) {
  HttpRequestSpec spec;
  spec.path = "/v1/models";
  spec.api_key = a.api_key;
  spec.timeout_s = 30;
  auto r = client.fetch(spec);
  if (!r.ok())
    return make_error(ErrorCode::kIo, "cannot reach the server: {}", r.status().message());
  const auto j = nlohmann::json::parse(r->body, nullptr, false);
  const bool listed = r->status == 200 && j.is_object() && j.contains("data") &&
                      j["data"].is_array() && !j["data"].empty() && j["data"][0].is_object();
  if (listed) {
    const auto& first = j["data"][0];
    if (model.empty() && first.contains("id") && first["id"].is_string()) model = first["id"];
    if (first.contains("max_model_len") && first["max_model_len"].is_number_integer()) {
      max_model_len = first["max_model_len"];
    }
  }
  if (model.empty() && r->status != 200) {
    return make_error(ErrorCode::kIo, "GET {}/v1/models answered HTTP {}: {}", client.url().text(),
                      r->status, error_message_of_body(r->body));
  }
  if (model.empty()) {
    return make_error(ErrorCode::kIo, "GET {}/v1/models names no model: give --model",
                      client.url().text());
  }
  return Status::ok_status();
}

int runtime_error(const Status& st) {
  std::fprintf(stderr, "tally: bench serve: %s\n", st.message().c_str());
  return kExitFailure;
}

int usage_error(const Status& st) {
  std::fprintf(stderr, "tally: bench serve: %s\n", st.message().c_str());
  return kExitUsage;
}

Result<Dataset> build_dataset(HttpClient& client, const ServeBenchArgs& a, const std::string& model,
                              int max_model_len,
                              const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string why;
  std::unique_ptr<PromptTokenizer> tok = probe_server_tokenizer(client, model, a.api_key, why);
  if (!tok) tok = make_word_tokenizer("the server has no usable /tokenize: " + why);
  if (a.dataset_name == "sharegpt") {
    SharegptConfig c;
    c.num_prompts = a.synthetic.num_prompts;
    c.output_len = a.sharegpt_output_len;
    c.max_model_len = max_model_len;
    c.seed = a.synthetic.seed;
    return make_sharegpt_dataset(pairs, c, *tok);
  }
  return make_synthetic_dataset(a.synthetic, *tok);
}

int run_serve_bench(ServeBenchArgs a) {
  auto resolved = resolve(a);
  if (!resolved.ok()) return usage_error(resolved.status());
  ServePlan& plan = *resolved;
  std::vector<std::pair<std::string, std::string>> pairs;
  if (a.dataset_name == "sharegpt") {
    auto loaded = load_sharegpt_pairs(a.dataset_path);
    if (!loaded.ok()) return usage_error(loaded.status());
    pairs = std::move(*loaded);
  }
  HttpClient client(plan.url);
  if (Status st = client.resolve(); !st.ok()) return runtime_error(st);
  std::string model = a.model;
  int max_model_len = 0;
  if (Status st = resolve_model(client, a, model, max_model_len); !st.ok())
    return runtime_error(st);
  plan.load.model = model;
  auto dataset = build_dataset(client, a, model, max_model_len, pairs);
  if (!dataset.ok()) return runtime_error(dataset.status().with_context("building the dataset"));

  RunInfo& info = plan.info;
  info.base_url = plan.url.text();
  info.endpoint = plan.load.endpoint;
  info.model = model;
  info.dataset = a.dataset_name;
  info.tokenizer = dataset->tokenizer;
  info.notes = dataset->notes;
  info.num_prompts = dataset->n_requests();
  info.burstiness = a.burstiness;
  info.max_concurrency = a.max_concurrency;
  std::vector<SweepPoint> points;
  nlohmann::json runs = nlohmann::json::array();
  LoadRun last;
  for (double rate : plan.rates) {
    plan.load.arrival.request_rate = rate;
    plan.load.progress_label = "rate " + format_rate(rate);
    auto run = run_load(client, plan.load, *dataset);
    if (!run.ok()) return runtime_error(run.status());
    info.request_rate = rate;
    info.max_in_flight = run->max_in_flight;
    const BenchSummary s = summarize(run->records, run->duration_s, plan.slo, info.percentiles);
    std::fputs(format_report(info, s).c_str(), stdout);
    std::fflush(stdout);
    if (!a.json_path.empty()) runs.push_back(run_json(info, s, run->records));
    points.push_back({rate, s});
    last = std::move(*run);
  }
  if (points.size() > 1) std::fputs(("\n" + format_sweep_table(points)).c_str(), stdout);
  if (!a.json_path.empty()) {
    const nlohmann::json out = points.size() > 1 ? nlohmann::json{{"sweep", runs}} : runs[0];
    if (Status st = write_json_file(a.json_path, out); !st.ok()) return runtime_error(st);
  }
  if (!a.plot_path.empty()) {
    const std::string title = fmt::format("tally bench serve: {} at {}", model, info.base_url);
    const std::string svg = points.size() > 1 ? sweep_plot_svg(title, points)
                                              : run_plot_svg(title, last.records, last.duration_s);
    if (Status st = write_text_file(a.plot_path, svg); !st.ok()) return runtime_error(st);
  }
  return kExitOk;
}

void add_target_flags(CLI::App& app, ServeBenchArgs& a) {
  app.add_option("--base-url", a.base_url, "Server to load: http://HOST:PORT[/prefix] (no https)")
      ->capture_default_str();
  app.add_option("--endpoint", a.endpoint,
                 "API path (default: /v1/completions; openai-chat: /v1/chat/completions)");
  app.add_option("--backend", a.backend,
                 "openai (completions) or openai-chat (vllm, sglang, llama.cpp: as openai)")
      ->capture_default_str();
  app.add_option("--model", a.model, "Model name sent (default: the first of GET /v1/models)");
  app.add_option("--api-key", a.api_key, "Bearer key (default: $OPENAI_API_KEY)");
  app.add_option("--request-timeout", a.request_timeout, "Seconds one request may take in all")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void add_workload_flags(CLI::App& app, ServeBenchArgs& a) {
  SyntheticConfig& s = a.synthetic;
  app.add_option("--dataset-name", a.dataset_name,
                 "random, shared-prefix, multi-turn, repeat (copy-heavy) or sharegpt")
      ->capture_default_str();
  app.add_option("--dataset-path", a.dataset_path, "ShareGPT JSON file (for sharegpt)");
  app.add_option("--num-prompts", s.num_prompts, "Requests to send (multi-turn: turns in all)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--random-input-len", s.input_len, "Prompt tokens per request (per turn)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--random-output-len", s.output_len, "Output tokens per request (max_tokens)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--random-range-ratio", s.range_ratio,
                 "Lengths uniform in [len*(1-r), len*(1+r)], r in [0, 1)")
      ->capture_default_str();
  app.add_option("--random-prefix-len", s.prefix_len,
                 "random: tokens of a prefix shared by every prompt; shared-prefix: system "
                 "prompt tokens (0 = 256)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--shared-prefix-groups", s.prefix_groups,
                 "shared-prefix: distinct system prompts (requests cycle through them)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--multi-turn-turns", s.turns, "multi-turn: user turns per conversation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sharegpt-output-len", a.sharegpt_output_len,
                 "sharegpt: output tokens of every request (0 = the reply's length)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", s.seed, "Seed of prompts, lengths and arrival times")
      ->capture_default_str();
  app.add_flag("--ignore-eos", a.ignore_eos,
               "Ask the server to ignore EOS (outputs as long as asked)");
  app.add_option("--temperature", a.temperature, "Sampling temperature sent")
      ->capture_default_str();
}

void add_load_flags(CLI::App& app, ServeBenchArgs& a) {
  app.add_option("--request-rate", a.request_rate,
                 "Requests/s of Poisson arrivals, or inf (all at once)")
      ->capture_default_str();
  app.add_option("--burstiness", a.burstiness,
                 "Gamma shape of the arrival gaps: 1 = Poisson, < 1 burstier, > 1 steadier")
      ->capture_default_str();
  app.add_option("--max-concurrency", a.max_concurrency, "Requests in flight at most; 0 = no limit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--num-warmups", a.num_warmups, "Warm-up requests before the run (not measured)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--sweep", a.sweep, "Comma list of request rates to run in turn (e.g. 1,2,4,inf)");
}

void add_output_flags(CLI::App& app, ServeBenchArgs& a) {
  app.add_option("--slo-ttft-ms", a.slo_ttft_ms, "Goodput SLO: TTFT at most this many ms");
  app.add_option("--slo-tpot-ms", a.slo_tpot_ms, "Goodput SLO: TPOT at most this many ms");
  app.add_option("--goodput", a.goodput, "Goodput SLOs as vLLM: ttft:MS tpot:MS e2el:MS")
      ->expected(1, 3);
  app.add_option("--percentile-metrics", a.percentile_metrics,
                 "Metrics shown: comma list of ttft, tpot, itl, e2el")
      ->capture_default_str();
  app.add_option("--metric-percentiles", a.metric_percentiles, "Percentiles shown, comma list")
      ->capture_default_str();
  app.add_option("--json", a.json_path,
                 "Write every figure and per-request record to this JSON file");
  app.add_option("--plot", a.plot_path,
                 "Write an SVG: latency CDFs and tok/s over time (--sweep: throughput vs latency)");
  app.add_flag("--disable-tqdm,--no-progress", a.no_progress, "No progress bar on stderr");
}

}  // namespace

Runner add_bench_serve_command(CLI::App& bench) {
  auto args = std::make_shared<ServeBenchArgs>();
  CLI::App* app = bench.add_subcommand(
      "serve", "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, throughput, goodput");
  add_target_flags(*app, *args);
  add_workload_flags(*app, *args);
  add_load_flags(*app, *args);
  add_output_flags(*app, *args);
  return [args] { return run_serve_bench(*args); };
}

}  // namespace tally::cli
