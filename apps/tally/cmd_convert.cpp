// tally convert --llama2c CHECKPOINT --tokenizer TOK.bin -o OUT.gguf
#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "io/llama2c.h"

namespace tally::cli {

Runner add_convert_command(CLI::App& app) {
  auto opts = std::make_shared<io::Llama2cConvertOptions>();
  app.add_option("--llama2c", opts->checkpoint_path, "llama2.c checkpoint (.bin, legacy v0 layout)")
      ->required()->check(CLI::ExistingFile);
  app.add_option("--tokenizer", opts->tokenizer_path, "llama2.c tokenizer (tokenizer.bin / tok512.bin)")
      ->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", opts->output_path, "GGUF file to write")->required();
  return [opts] {
    Status st = io::convert_llama2c(*opts);
    if (!st.ok()) return report_error(st);
    fmt::print(stderr, "tally: wrote {}\n", opts->output_path);
    return kExitOk;
  };
}

}  // namespace tally::cli
