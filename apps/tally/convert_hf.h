// `tally convert --hf DIR`: see convert_hf.cpp.
#pragma once

#include <string>

namespace tally::cli {

// type_name: "auto" (each tensor's own f32/f16/bf16), f32, f16, bf16 or a `tally quantize` type.
int run_convert_hf(const std::string& dir, const std::string& type_name, const std::string& output);

}  // namespace tally::cli
