// tally info MODEL: what a GGUF file holds, without loading the weights.
#include <fmt/format.h>

#include <map>

#include "cli_common.h"
#include "commands.h"
#include "io/gguf.h"
#include "model/hf_checkpoint.h"

namespace tally::cli {

namespace {

struct InfoArgs {
  std::string model;
  bool tensors = false;
  bool metadata = false;
};

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

int run_info(const InfoArgs& args) {
  auto file = open_model_file(args.model);
  if (!file.ok()) return report_error(file.status());
  const io::GgufFile& f = *file;

  std::string arch = "?";
  if (auto a = f.get_string("general.architecture"); a.ok()) arch = std::string(*a);
  fmt::print("file:          {} ({}, GGUF v{})\n", args.model, human_bytes(f.file_size()), f.version());
  if (auto n = f.get_string("general.name"); n.ok()) fmt::print("name:          {}\n", *n);
  fmt::print("architecture:  {}\n", arch);

  fmt::print("hyper-parameters:\n");
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : f.metadata())
    if (key.substr(0, prefix.size()) == prefix)
      fmt::print("  {:<44} {}\n", key.substr(prefix.size()), value.to_display_string());

  if (auto m = f.get_string("tokenizer.ggml.model"); m.ok()) {
    size_t n_tokens = 0;
    if (const auto* t = f.find("tokenizer.ggml.tokens")) n_tokens = t->array_size();
    std::string pre = "default";
    if (auto p = f.get_string("tokenizer.ggml.pre"); p.ok()) pre = std::string(*p);
    fmt::print("tokenizer:     {} (pre: {}), {} tokens\n", *m, pre, n_tokens);
  }

  // Tensor types and sizes.
  struct TypeSum { int64_t count = 0, elements = 0; uint64_t bytes = 0; };
  std::map<std::string, TypeSum> by_type;
  int64_t params = 0;
  uint64_t bytes = 0;
  for (const auto& t : f.tensors()) {
    auto traits = dtype_traits(t.raw_type);
    auto& s = by_type[traits ? std::string(traits->name) : fmt::format("type{}", t.raw_type)];
    s.count += 1;
    s.elements += t.n_elements();
    s.bytes += t.n_bytes;
    params += t.n_elements();
    bytes += t.n_bytes;
  }
  fmt::print("parameters:    {} ({:.3f} M), {} tensors, {}\n", params, params / 1e6, f.tensors().size(),
             human_bytes(bytes));
  fmt::print("tensor types:\n");
  for (const auto& [name, s] : by_type)
    fmt::print("  {:<8} {:>5} tensors {:>14} elements {:>12}\n", name, s.count, s.elements,
               human_bytes(s.bytes));

  if (args.metadata) {
    fmt::print("metadata:\n");
    for (const auto& [key, value] : f.metadata())
      fmt::print("  {:<44} {}\n", key, value.to_display_string());
  }
  if (args.tensors) {
    fmt::print("tensors:\n");
    for (const auto& t : f.tensors()) {
      auto traits = dtype_traits(t.raw_type);
      fmt::print("  {:<32} {:<6} {:<20} {}\n", t.name, traits ? traits->name : "?",
                 dims_string(t.dims), human_bytes(t.n_bytes));
    }
  }
  return kExitOk;
}

}  // namespace

Runner add_info_command(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  args->model = default_model_path();
  app.add_option("model", args->model, "GGUF model file or Hugging Face model directory")->capture_default_str();
  app.add_flag("--tensors", args->tensors, "List every tensor (name, type, shape, size)");
  app.add_flag("--metadata", args->metadata, "Dump every metadata key");
  return [args] { return run_info(*args); };
}

}  // namespace tally::cli
