// libFuzzer target: one KV block file of the disk offload tier (kv/kv_disk_tier.h) on
// arbitrary bytes, as a restarted server finds it in --kv-offload-dir: indexed or deleted at
// open, then read. See kv_disk_block_input.h for the input's framing and the checks.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "kv_disk_block_input.h"

namespace {
// A directory of this process's own, removed when the fuzzer exits.
struct FuzzDir {
  std::string path;
  FuzzDir() {
    char templ[] = "/tmp/tally_kv_disk_fuzz_XXXXXX";
    const char* made = mkdtemp(templ);
    if (made == nullptr) std::abort();
    path = made;
  }
  ~FuzzDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
const std::string& fuzz_dir() {
  static const FuzzDir dir;
  return dir.path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tally::fuzz::kv_disk_fuzz_one(data, size, fuzz_dir());
  return 0;
}
