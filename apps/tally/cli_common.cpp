#include "cli_common.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "model/kv_storage.h"
#include "plan/run_defaults.h"
#include "progress_bar.h"

namespace tally::cli {

namespace {

constexpr const char* kBundledModel = "stories260K.gguf";

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// <prefix>/share/tally/models when this binary runs from <prefix>/bin (cmake --install).
std::string installed_model_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path().parent_path() / TALLY_MODEL_INSTALL_DIR).string();
}

}  // namespace

EngineConfig single_sequence_engine_config(const ModelConfig& model, const SingleSequence& s) {
  EngineConfig c;
  c.threads = s.threads;
  c.max_batched_tokens = s.batch_size;
  c.max_seqs = 1;
  c.max_model_len = s.max_model_len;
  c.block_size = plan::kDefaultBlockSize;
  c.kv_type = s.kv_type;
  const int64_t block_bytes = KvStorageShape::for_model(model, 1, c.block_size, s.kv_type).bytes();
  c.kv_cache_memory = (std::max<int64_t>(1, s.positions) + c.block_size - 1) / c.block_size * block_bytes;
  return c;
}

std::string default_model_path() {
  if (const char* env = std::getenv("TALLY_MODEL"); env && *env) return env;
  if (const std::string dir = installed_model_dir(); !dir.empty()) {
    const std::string installed = dir + "/" + kBundledModel;
    if (file_exists(installed)) return installed;
  }
  const std::string in_tree = std::string(TALLY_SOURCE_DIR) + "/models/" + kBundledModel;
  if (file_exists(in_tree)) return in_tree;
  return std::string("models/") + kBundledModel;
}

Result<std::unique_ptr<Model>> load_model(const std::string& path) {
  ProgressBar bar("loading " + std::filesystem::path(path).filename().string());
  return Model::load(path, default_backend(), bar.callback());
}

void write_stdout(std::string_view text) {
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int report_error(const Status& status) {
  std::fprintf(stderr, "tally: %s\n", status.message().c_str());
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kFormat:
    case ErrorCode::kUnsupported:
    case ErrorCode::kIo:
    case ErrorCode::kOutOfRange:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

}  // namespace tally::cli
