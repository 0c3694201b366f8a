#include "server/server_config.h"

#include <filesystem>

#include "server/auth.h"

namespace tally::server {

void serve_add_flags(CLI::App& app, ServeOptions& o) {
  ServerConfig& s = o.server;
  // Network and model.
  app.add_option("--host", s.host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  app.add_option("--port", s.port, "TCP port; 0 picks a free one (printed at start)")
      ->capture_default_str();
  app.add_option("-m,--model", s.model_path, "GGUF model file or Hugging Face model directory")->capture_default_str();
  app.add_option("--served-model-name", s.served_model_names,
                 "Name(s) clients use in \"model\" (repeatable; default: the file's stem)");
  app.add_option("--generation-config", s.generation_config,
                 "Default sampling of requests: 'auto' = the model's (generation_config.json / "
                 "general.sampling.*), 'none' = OpenAI's, or a directory with a "
                 "generation_config.json; a request's own fields win")
      ->capture_default_str();
  // Security and limits.
  app.add_option("--api-key", s.api_keys, "Require 'Authorization: Bearer KEY' (repeatable)");
  app.add_option("--api-keys-file", s.api_keys_file,
                 "File of API keys, one per line ('#' comments)");
  app.add_flag("--open-health", s.open_health, "/health and /ready answer without an API key");
  app.add_flag("--open-metrics", s.open_metrics, "/metrics answers without an API key");
  app.add_option("--rate-limit-rpm", s.rate_limits.requests_per_minute,
                 "Requests per minute per API key (per client address without keys); 0 = off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rate-limit-tpm", s.rate_limits.tokens_per_minute,
                 "Prompt + completion tokens per minute per API key; 0 = off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-body-bytes", o.max_body_bytes, "Largest request body (413 beyond)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-tokens-limit", s.max_tokens_limit,
                 "Largest max_tokens a request may ask for; 0 = the context length")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-n", s.max_n, "Largest n (completions per prompt) a request may ask for")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-queue", o.engine.config.max_waiting,
                 "Requests waiting for the engine at most; beyond, 503 (load is shed)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-queued-bytes", s.max_queued_bytes,
                 "Memory requests waiting for the engine may hold (prompts, samplers, stop "
                 "strings); beyond, 503; 0 = no limit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prompt-workers", s.prompt_workers,
                 "Threads that tokenize prompts and render chat templates (off the I/O thread)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--drain-timeout", s.drain_timeout,
                 "Seconds SIGTERM/SIGINT waits for running requests before aborting them")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--header-timeout", s.http.header_timeout,
                 "Seconds a client may take to send a request's header (408 beyond)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--read-timeout", s.http.read_timeout,
                 "Seconds a client may take to send a request's body (408 beyond)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--idle-timeout", s.http.idle_timeout,
                 "Seconds a keep-alive connection may stay idle between requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option(
         "--write-timeout", s.http.write_timeout,
         "Seconds a write may stall (a client that stops reading) before the connection closes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-connections", s.http.max_connections,
                 "Open connections at most; beyond, 503 and close (0: the open-file limit less 64)")
      ->capture_default_str();
  app.add_option("--access-log", s.access_log,
                 "Access log (JSON lines): '-' stdout, 'off', or a file")
      ->capture_default_str();
  app.add_option("--metrics-prefix", s.metrics_prefix,
                 "Metric name prefix: tally (tally:...) or vllm (vllm:..., for vLLM dashboards)")
      ->capture_default_str();
}

std::string model_name_from_path(const std::string& path) {
  // A Hugging Face directory is named by its last component, whole ("Qwen2.5-7B-Instruct/").
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::filesystem::path p = std::filesystem::path(path).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();  // a trailing '/'
    return p.filename().string();
  }
  return std::filesystem::path(path).stem().string();
}

namespace {

Status check_names(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (name.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "--served-model-name must not be empty");
    }
  }
  return {};
}

}  // namespace

Status serve_finalize(ServeOptions& o) {
  ServerConfig& s = o.server;
  if (s.model_path.empty())
    return make_error(ErrorCode::kInvalidArgument, "-m/--model is required");
  if (!std::filesystem::exists(s.model_path)) {
    return make_error(ErrorCode::kNotFound, "--model {}: no such file", s.model_path);
  }
  o.engine.config.model_path = s.model_path;
  TALLY_RETURN_IF_ERROR(check_names(s.served_model_names));
  if (s.served_model_names.empty())
    s.served_model_names.push_back(model_name_from_path(s.model_path));
  for (const auto& key : s.api_keys) {
    if (key.empty()) return make_error(ErrorCode::kInvalidArgument, "--api-key must not be empty");
  }
  if (!s.api_keys_file.empty()) {
    TALLY_ASSIGN_OR_RETURN(auto keys, ApiKeys::read_file(s.api_keys_file));
    s.api_keys.insert(s.api_keys.end(), keys.begin(), keys.end());
  }
  if (s.metrics_prefix != "tally" && s.metrics_prefix != "vllm") {
    return make_error(ErrorCode::kInvalidArgument,
                      "--metrics-prefix must be tally or vllm, got '{}'", s.metrics_prefix);
  }
  s.http.max_body_bytes = static_cast<size_t>(o.max_body_bytes);
  return {};
}

}  // namespace tally::server
