// tally serve: the OpenAI-compatible HTTP server (src/server) over the engine. The server's
// flags are declared in src/server/server_config.cpp, the engine's in
// src/engine/engine_flags.cpp (shared with `tally bench throughput`); docs/server.md describes
// them and the API.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/engine.h"
#include "engine/engine_flags.h"
#include "engine/ledger_text.h"
#include "io/gguf.h"
#include "model/generation_config.h"
#include "model/hf_checkpoint.h"
#include "metrics/server_metrics.h"
#include "model/arch.h"
#include "model/model_config.h"
#include "server/chat_prompt.h"
#include "server/prometheus_observer.h"
#include "server/server.h"
#include "server/server_config.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

namespace {

// The model's own chat template when it has one, else ChatML.
std::unique_ptr<server::ChatRenderer> chat_renderer_for(const Result<io::GgufFile>& gguf,
                                                        const Tokenizer& tokenizer) {
  if (!gguf.ok()) return server::chatml_renderer(ChatTemplateContext::from_tokenizer(tokenizer));
  return server::model_chat_renderer(*gguf, tokenizer);
}

// --generation-config into the sampling requests start from: OpenAI's defaults, the model's
// (or the given directory's) on top.
Status resolve_request_sampling(const Result<io::GgufFile>& gguf, server::ServerConfig& s) {
  TALLY_ASSIGN_OR_RETURN(SamplingDefaults d,
                         resolve_generation_config(s.generation_config, gguf.ok() ? &*gguf : nullptr));
  d.apply_to(s.request_sampling);
  // On stderr whatever the log level, like the ledger: it changes what every request gets.
  if (!d.empty()) fmt::print(stderr, "tally serve: default sampling from the model's generation config: {}\n", d.describe());
  return Status::ok_status();
}

metrics::ServerMetricsOptions metrics_options(const server::ServeOptions& o, Engine& engine) {
  metrics::ServerMetricsOptions m;
  m.prefix = o.server.metrics_prefix + ":";
  m.model_name = o.server.served_model_names.front();
  m.max_model_len = engine.max_model_len();
  m.version = TALLY_VERSION;
  const ModelConfig& config = engine.model_config();
  if (config.arch) m.model_info.emplace_back("architecture", std::string(config.arch->name));
  return m;
}

int run_serve(server::ServeOptions& o) {
  if (Status st = server::serve_finalize(o); !st.ok()) return report_error(st);
  auto config = engine_flags_to_config(o.engine);
  if (!config.ok()) return report_error(config.status());
  const auto gguf = open_model_file(o.server.model_path, /*metadata_only=*/true);
  if (Status st = resolve_request_sampling(gguf, o.server); !st.ok()) return report_error(st);
  auto engine = Engine::create(*config);
  if (!engine.ok()) return report_error(engine.status());
  // The ledger on stderr whatever the log level: what this server holds, before any request.
  fmt::print(stderr, "tally serve: memory ledger\n{}", format_ledger((*engine)->ledger()));
  server::PrometheusObserver observer(metrics_options(o, **engine), **engine);
  auto chat = chat_renderer_for(gguf, (*engine)->tokenizer());
  spdlog::info("serve: chat template: {}", chat->describe());
  server::Server srv(o.server, **engine, std::move(chat), &observer);
  auto port = srv.listen();
  if (!port.ok()) return report_error(port.status());
  // On stderr whatever the log level: scripts (and the tests) read the port from it.
  fmt::print(stderr, "tally serve: listening on http://{}:{} (model '{}', context {} tokens)\n",
             o.server.host, *port, o.server.served_model_names.front(), (*engine)->max_model_len());
  std::fflush(stderr);
  srv.run();
  fmt::print(stderr, "tally serve: stopped\n");
  return kExitOk;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto options = std::make_shared<server::ServeOptions>();
  options->server.model_path = default_model_path();
  server::serve_add_flags(app, *options);
  engine_flags_add(app, options->engine);
  return [options] { return run_serve(*options); };
}

}  // namespace tally::cli
