// libFuzzer target: SafetensorsFile::parse on arbitrary bytes. A parsed file must be fully
// usable: every tensor's bytes lie in the input (ASan checks by reading them), match its
// shape and dtype, and it can be found by name. Anything else is a bug.
#include <cstddef>
#include <cstdint>

#include "io/safetensors.h"

namespace {

void require(bool cond) {
  if (!cond) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = tally::io::SafetensorsFile::parse({data, size}, "fuzz");
  if (!f.ok()) {
    require(!f.status().message().empty());
    return 0;
  }
  volatile size_t sink = 0;
  size_t total = 0;
  for (const auto& t : f->tensors()) {
    require(f->find(t.name) == &t);
    require(t.bytes.data() >= data && t.bytes.data() + t.bytes.size() <= data + size);
    uint8_t x = 0;
    for (uint8_t b : t.bytes) x ^= b;
    sink = sink + x;
    total += t.bytes.size();
  }
  for (const auto& [k, v] : f->metadata()) sink = sink + k.size() + v.size();
  require(total <= size);
  return 0;
}
