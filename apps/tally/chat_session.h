// `tally generate --chat`: an interactive multi-turn chat in the terminal. Each turn renders
// the whole conversation with a chat template, generates the answer on the same EngineCore
// `tally generate` uses and streams it to stdout. Ctrl-C stops the answer being written (not
// the program); `/exit` or end of input (Ctrl-D) quits; `/reset` forgets the conversation.
//
// The template: --chat-template FILE (Jinja) if given, else the model's
// tokenizer.chat_template, else a plain transcript ("User: ...\nAssistant: ..."), which also
// stops the answer where the model starts the user's next line. See docs/cli.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_types.h"
#include "plan/run_defaults.h"
#include "tensor/dtype.h"

namespace tally {
class Model;
class Tokenizer;
}  // namespace tally

namespace tally::cli {

struct ChatOptions {
  std::string system_prompt;       // the first message, role "system" ("" = none)
  std::string template_path;       // --chat-template ("" = the model's or the plain one)
  EngineRequest turn;              // per answer: max_tokens, sampling, ignore_eos
  std::vector<std::string> stop;   // --stop strings (the plain template adds its own)
  int threads = 0;
  int32_t ctx_size = 0;            // 0 = the model's context length
  int32_t batch_size = plan::kDefaultBatchTokens;
  KvTypes kv_type = plan::kDefaultKvType;
  bool prefix_cache = true;        // each turn reuses the history's KV (--no-prefix-cache)
};

// Runs the chat on stdin/stdout until /exit or end of input; returns the exit status.
int run_chat(std::unique_ptr<Model> model, std::unique_ptr<Tokenizer> tokenizer,
             const ChatOptions& options);

}  // namespace tally::cli
