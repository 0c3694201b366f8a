// The settings of `tally serve`, each flag declared once (name, default, help): the server's
// own in serve_add_flags(), the engine's in engine_flags_add() (engine/engine_flags.h, shared
// with `tally bench throughput`). `tally serve --help` and docs/server.md list both.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine_flags.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/rate_limiter.h"

namespace tally::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::string model_path;
  std::vector<std::string> served_model_names;  // empty: the model file's stem
  std::vector<std::string> api_keys;            // --api-key (repeatable) + --api-keys-file
  std::string api_keys_file;
  bool open_health = false;   // /health and /ready answer without a key
  bool open_metrics = false;  // /metrics answers without a key
  RateLimits rate_limits;
  HttpServerLimits http;
  int32_t max_tokens_limit = 0;  // largest max_tokens a request may ask; 0 = the context
  int32_t max_n = 16;            // largest n (samples per prompt)
  int32_t max_prompts = 64;      // largest list of prompts in one completions request
  int64_t max_queued_bytes = int64_t{1} << 30;  // queued requests' memory (queued_bytes.h); 0 = off
  int32_t prompt_workers = 2;    // threads that tokenize prompts and render chat templates
  double drain_timeout = 30;     // seconds SIGTERM waits for running requests
  std::string access_log = "-";  // "-" stdout, "off", or a file
  std::string metrics_prefix = "tally";
  // --generation-config: "auto" (the model's default sampling), "none", or a directory with a
  // generation_config.json; resolved by the command into request_sampling.
  std::string generation_config = "auto";
  // What a request's absent sampling fields get: OpenAI's defaults with the model's on top.
  SamplingParams request_sampling = openai_sampling_defaults();
};

// The flags as typed, converted by serve_finalize() (the server's) and by the command with
// engine_flags_to_config() (the engine's).
struct ServeOptions {
  ServerConfig server;
  EngineFlags engine;  // --max-queue and the model path land in engine.config
  int64_t max_body_bytes = 4 << 20;
};

// The server's own flags (network, model, security, limits, --max-queue); the command adds
// the engine's with engine_flags_add(app, options.engine).
void serve_add_flags(CLI::App& app, ServeOptions& options);

// Checks the server's values that CLI11 cannot (names, files, combinations) and fills in what
// depends on others (model path into the engine, default served name, keys from the file).
// InvalidArgument / NotFound naming the flag.
Status serve_finalize(ServeOptions& options);

// "models/stories260K.gguf" -> "stories260K".
std::string model_name_from_path(const std::string& path);

}  // namespace tally::server
