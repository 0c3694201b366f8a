#include "cli_common.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

namespace tally::cli {

std::string default_model_path() {
  if (const char* env = std::getenv("TALLY_MODEL"); env && *env) return env;
  struct stat st {};
  const std::string in_tree = std::string(TALLY_SOURCE_DIR) + "/models/stories260K.gguf";
  if (::stat(in_tree.c_str(), &st) == 0) return in_tree;
  return "models/stories260K.gguf";
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
