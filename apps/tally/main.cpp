// tally: one thin main. Subcommands parse their flags and call the libraries.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/log.h"
#include "cli_common.h"
#include "commands.h"
#include "version.h"

int main(int argc, char** argv) {
  using namespace tally::cli;
  CLI::App app{"tally: LLM inference engine and server (CPU)", "tally"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "Print the version, the commit and the CPU features in use");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "Log level: trace, debug, info, warn, error, off")
      ->capture_default_str();

  std::vector<std::pair<CLI::App*, Runner>> commands;
  auto add = [&](const char* name, const char* help, Runner (*fn)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.emplace_back(sub, fn(*sub));
  };
  add("generate", "Generate text from a prompt, streamed to stdout", add_generate_command);
  add("info", "Print a model's architecture, hyper-parameters and tensors", add_info_command);
  add("tokenize", "Print the token ids and pieces of a text", add_tokenize_command);
  add("convert", "Convert a model into GGUF (llama2.c checkpoints) or write a synthetic one", add_convert_command);
  add("quantize", "Quantize a GGUF model to a llama.cpp file type (Q4_K_M, Q8_0, ...)", add_quantize_command);
  add("perplexity", "Perplexity of a model over a text (llama.cpp's method: the second half of each chunk)",
      add_perplexity_command);
  add("imatrix", "Importance matrix of a model over calibration text (llama.cpp's imatrix GGUF)",
      add_imatrix_command);
  add("plan", "Memory ledger: weights, activations, KV cache and what fits a budget", add_plan_command);
  add("serve", "OpenAI-compatible HTTP server (completions, chat, streaming, /metrics)", add_serve_command);
  add("bench", "Benchmarks: a model's prefill/decode speed, the engine's throughput, or a server under load", add_bench_command);

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (auto& [sub, run] : commands) known = known || sub->get_name() == argv[1];
    if (!known) {
      std::fprintf(stderr, "tally: unknown command '%s' (see 'tally --help')\n", argv[1]);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::fprintf(stderr, "tally: %s (see 'tally --help')\n", msg.c_str());
    return kExitUsage;
  }
  tally::log_set_level(log_level);
  for (auto& [sub, run] : commands)
    if (sub->parsed()) return run();
  return kExitUsage;
}
