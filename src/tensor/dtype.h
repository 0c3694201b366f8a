// Element types of tensors, numbered as GGUF/ggml number them (the numbers are in files).
// A type stores its values in blocks: `block_size` elements in `block_bytes` bytes
// (1 and sizeof(T) for plain types). Layouts of the quantized blocks: quant_blocks.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tally {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct DTypeTraits {
  std::string_view name;  // as llama.cpp prints it: "f32", "q4_K", ...
  int64_t block_size;     // elements per block
  int64_t block_bytes;    // bytes per block
  bool computable;        // tally has dequantize + matmul kernels for it
};

// Traits of a raw type number read from a file; nullopt for numbers GGUF does not define.
std::optional<DTypeTraits> dtype_traits(uint32_t raw);
// Traits of a known type (checks that it is known).
const DTypeTraits& dtype_info(DType type);
std::string_view dtype_name(DType type);
// Parses "f32", "F16", "q4_k", "Q4_K", "bf16", ... (case-insensitive).
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size (checked by callers
// that read files: see dtype_row_bytes_checked).
int64_t dtype_row_bytes(DType type, int64_t n);
// nullopt when n is not a multiple of the block size or the product overflows.
std::optional<int64_t> dtype_row_bytes_checked(uint32_t raw, int64_t n);

}  // namespace tally
