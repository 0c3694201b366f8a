#include "plan/model_spec.h"

#include <filesystem>
#include <fstream>

#include "plan/gguf_source.h"
#include "plan/hf_config.h"
#include "plan/plan_presets.h"

namespace tally::plan {

namespace {

bool starts_with_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof(magic));
  return in.gcount() == 4 && magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' &&
         magic[3] == 'F';
}

}  // namespace

Result<PlanModel> plan_model_from_spec(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(spec, ec);
  if (!ec && fs::is_directory(st)) {
    const std::string config = (fs::path(spec) / "config.json").string();
    if (!fs::exists(config, ec))
      return make_error(ErrorCode::kNotFound, "{}: a folder without a config.json", spec);
    return plan_model_from_hf_config(config);
  }
  if (!ec && fs::is_regular_file(st)) {
    if (starts_with_gguf_magic(spec)) return plan_model_from_gguf_path(spec);
    return plan_model_from_hf_config(spec);
  }
  const fs::path p(spec);
  if (p.extension() == ".gguf" || p.extension() == ".json")
    return make_error(ErrorCode::kNotFound, "{}: no such file", spec);
  return plan_preset(spec);
}

}  // namespace tally::plan
