// The subcommands of `tally`: each declares its flags once on a CLI11 app (name, default,
// help — `--help` and docs/cli.md come from these) and returns a callable that runs it.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace tally::cli {

using Runner = std::function<int()>;

Runner add_generate_command(CLI::App& app);
Runner add_info_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_convert_command(CLI::App& app);
Runner add_plan_command(CLI::App& app);
Runner add_quantize_command(CLI::App& app);
Runner add_perplexity_command(CLI::App& app);
Runner add_imatrix_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
// `tally bench` without a subcommand (cmd_bench_model.cpp): adds its flags to `bench`.
Runner add_bench_model_options(CLI::App& bench);
// `tally bench serve` (cmd_bench_serve.cpp): adds the subcommand to `bench`.
Runner add_bench_serve_command(CLI::App& bench);

}  // namespace tally::cli
