// Shared pieces of the subcommands: the default model, error reporting, exit codes.
#pragma once

#include <string>

#include "base/status.h"

namespace tally::cli {

// Exit codes: 0 ok, 1 runtime failure (a model that fails to run), 2 usage (bad flag, bad
// value, missing file).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// models/stories260K.gguf of this checkout (or $TALLY_MODEL): every command's default model.
std::string default_model_path();

// Prints "tally: <context>: <message>" on one line to stderr; returns the exit code for it.
int report_error(const Status& status);

}  // namespace tally::cli
