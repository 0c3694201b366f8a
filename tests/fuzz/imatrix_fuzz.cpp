// libFuzzer target: the importance-matrix reader (io/imatrix_file.h) on arbitrary bytes, GGUF
// or legacy .dat. Whatever it accepts must write back in both formats and read back the same
// entries.
#include <cstddef>
#include <cstdint>

#include "io/imatrix_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = tally::io::imatrix_parse({data, size}, "fuzz");
  if (!m.ok()) {
    if (m.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const auto& [name, e] : m->entries)
    for (int64_t mat = 0; mat < e.n_mat; ++mat)
      if (static_cast<int64_t>(e.importance(mat).size()) != e.n_cols) __builtin_trap();
  const std::vector<uint8_t> legacy = tally::io::imatrix_to_legacy_bytes(*m);
  auto back = tally::io::imatrix_parse(legacy, "legacy");
  if (!back.ok() || back->entries.size() != m->entries.size()) __builtin_trap();
  return 0;
}
