// Shared pieces of the subcommands: the default model, error reporting, exit codes.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/engine.h"
#include "model/model.h"
#include "plan/run_defaults.h"

namespace tally::cli {

// Exit codes: 0 ok, 1 runtime failure (a model that fails to run), 2 usage (bad flag, bad
// value, missing file).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Every command's default model: $TALLY_MODEL, else the bundled stories260K.gguf of this
// installation (<prefix>/share/tally/models) or of this checkout (models/).
std::string default_model_path();

// Model::load with a progress bar on stderr while the weights are bound (when it is a terminal).
Result<std::unique_ptr<Model>> load_model(const std::string& path);

// One sequence on the engine core (`tally generate`, `--chat`): a context of max_model_len
// tokens (0 = the model's), a KV pool just large enough for `positions`, batch_size tokens a step.
struct SingleSequence {
  int threads = 0;
  int32_t batch_size = plan::kDefaultBatchTokens;
  int32_t max_model_len = plan::kDefaultContext;
  int64_t positions = 1;
  KvTypes kv_type = plan::kDefaultKvType;
};
EngineConfig single_sequence_engine_config(const ModelConfig& model, const SingleSequence& s);

// Writes `text` to stdout and flushes it: streamed output appears as it is produced.
void write_stdout(std::string_view text);

// Prints "tally: <context>: <message>" on one line to stderr; returns the exit code for it.
int report_error(const Status& status);

}  // namespace tally::cli
