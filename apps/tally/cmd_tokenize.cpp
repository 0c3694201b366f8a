// tally tokenize MODEL TEXT: the ids and pieces of a text under a model's tokenizer.
#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "io/gguf.h"
#include "model/hf_checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

namespace {

struct TokenizeArgs {
  std::string model;
  std::string text;
  bool no_special = false;
  bool parse_special = false;
  bool ids_only = false;
};

int run_tokenize(const TokenizeArgs& args) {
  auto file = open_model_file(args.model, /*metadata_only=*/true);
  if (!file.ok()) return report_error(file.status());
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return report_error(tok.status());
  const auto ids = (*tok)->encode(args.text, !args.no_special, args.parse_special);
  if (args.ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) fmt::print("{}{}", i ? " " : "", ids[i]);
    fmt::print("\n");
    return kExitOk;
  }
  for (int32_t id : ids) fmt::print("{:>8} '{}'\n", id, (*tok)->piece(id));
  fmt::print("{} tokens\n", ids.size());
  return kExitOk;
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  app.add_option("model", args->model, "GGUF model (or vocabulary-only) file, or Hugging Face model directory")->required();
  app.add_option("text", args->text, "Text to tokenize")->required();
  app.add_flag("--no-bos", args->no_special, "Do not add BOS/EOS as the model's metadata asks");
  app.add_flag("--parse-special", args->parse_special,
               "Recognise special-token texts such as <|im_start|> in the text");
  app.add_flag("--ids", args->ids_only, "Print only the ids, space-separated, on one line");
  return [args] { return run_tokenize(*args); };
}

}  // namespace tally::cli
