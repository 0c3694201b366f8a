// libFuzzer target: GgufFile::parse on arbitrary bytes. A parsed file must be fully usable:
// every value displays and converts, every tensor's bytes are readable (ASan checks the
// bounds), and writing the content back out with GgufWriter must parse again to the same
// counts. Anything else (crash, sanitizer report, trap) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace {

using tally::io::GgufFile;
using tally::io::GgufValue;

void require(bool cond) {
  if (!cond) __builtin_trap();
}

size_t touch(const GgufValue& v) {
  size_t h = v.to_display_string(4).size();
  h += v.as_int().value_or(0) != 0;
  h += v.as_float().has_value();
  h += v.as_bool().value_or(false);
  if (auto s = v.as_string()) h += s->empty() ? 0 : static_cast<unsigned char>(s->back());
  for (size_t i = 0; i < v.array_size(); ++i) {
    const GgufValue item = v.item(i);
    require(item.type == v.elem_type);
    h += touch(item);
  }
  return h;
}

void round_trip(const GgufFile& f) {
  tally::io::GgufWriter w;
  for (const auto& [key, value] : f.metadata()) w.set_value(std::string(key), value);
  for (const auto& t : f.tensors()) require(w.add_tensor(std::string(t.name), t.type, t.dims, t.bytes()).ok());
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto again = GgufFile::parse(bytes, "round-trip");
  require(again.ok());
  require(again->metadata().size() == f.metadata().size());
  require(again->tensors().size() == f.tensors().size());
  require(again->alignment() == f.alignment());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = GgufFile::parse({data, size}, "fuzz");
  if (!f.ok()) {
    require(!f.status().message().empty());
    return 0;
  }
  volatile size_t sink = 0;
  for (const auto& [key, value] : f->metadata()) {
    sink = sink + touch(value);
    require(f->find(key) == &value);
    sink = sink + f->get_int(key).ok() + f->get_float(key).ok() + f->get_bool(key).ok() + f->get_string(key).ok();
    sink = sink + f->get_string_array(key).ok() + f->get_f32_array(key).ok() + f->get_int_array(key).ok();
  }
  for (const auto& t : f->tensors()) {
    require(f->find_tensor(t.name) == &t);
    require(t.n_elements() >= 0);
    uint8_t x = 0;
    for (uint8_t b : t.bytes()) x ^= b;
    sink = sink + x;
  }
  round_trip(*f);
  return 0;
}
