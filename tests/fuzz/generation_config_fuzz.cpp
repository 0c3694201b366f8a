// libFuzzer target: a Hugging Face generation_config.json (src/model/generation_config.h) on
// arbitrary bytes. See generation_config_input.h for the checks.
#include <cstddef>
#include <cstdint>

#include "generation_config_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tally::fuzz::generation_config_fuzz_one(data, size);
  return 0;
}
