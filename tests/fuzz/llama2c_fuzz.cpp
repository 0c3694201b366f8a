// libFuzzer target: the llama2.c importer on arbitrary checkpoint + tokenizer bytes.
// Input: u32 checkpoint length, the checkpoint, then the tokenizer. Whatever it accepts must
// become a GGUF that the reader parses back.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "io/gguf.h"
#include "io/llama2c.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t split = 0;
  std::memcpy(&split, data, 4);
  data += 4;
  size -= 4;
  if (split > size) split = static_cast<uint32_t>(size);
  tally::io::GgufWriter w;
  const tally::Status st = tally::io::llama2c_to_gguf({data, split}, {data + split, size - split}, {}, w);
  if (!st.ok()) {
    if (st.message().empty()) __builtin_trap();
    return 0;
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto f = tally::io::GgufFile::parse(bytes, "converted");
  if (!f.ok() || f->tensors().empty()) __builtin_trap();
  return 0;
}
