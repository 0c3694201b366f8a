// The storage types of a KV cache: one for K, one for V (--kv-type sets both, --kv-type-k and
// --kv-type-v one each). f32, f16 and bf16 store each value; q8_0 and q4_0 store a row of
// n_kv_heads heads of head_dim values as blocks of min(32, head_dim) values
// (tensor/quant_blocks.h), quantized once when a token's row is written:
//   head_dim a multiple of 32: ggml's blocks of 32, head_dim / 32 a head;
//   head_dim a divisor of 32 (even for q4_0): one short block a head, so each head has a scale
//   of its own (in a block of 32 shared by heads, the head with K's outlier channels would set
//   the step of the others: stories260K's q8_0 KV KLD 0.0022 shared, 0.0013 per head).
// So a block never spans two heads, and the kernels find a head's values by block arithmetic.
// These functions are the one home of that rule: every KV byte count goes through them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "tensor/dtype.h"

namespace tally {

struct KvTypes {
  DType k = DType::kF32;
  DType v = DType::kF32;

  constexpr KvTypes() = default;
  // One type for both: lets a plain DType stand for a cache whose K and V agree.
  constexpr KvTypes(DType both) : k(both), v(both) {}  // NOLINT(google-explicit-constructor)
  constexpr KvTypes(DType k_type, DType v_type) : k(k_type), v(v_type) {}
  bool operator==(const KvTypes&) const = default;
};

// f32, f16, bf16, q8_0, q4_0.
bool kv_type_is_valid(DType type);
// Ok when K and V are both KV types; else Unsupported "kv type X is not supported (f32, ...)".
Status kv_types_supported(KvTypes types);
// "f16" when K and V agree, else "q8_0/f16" (K/V).
std::string kv_types_name(KvTypes types);
// A KV type by its name (case-insensitive); the error lists the valid names.
Result<DType> kv_type_from_name(std::string_view name);
// --kv-type (both) with the --kv-type-k / --kv-type-v overrides (empty: not given). The error
// names the flag: "--kv-type-v: unknown kv type 'q5' (...)".
Result<KvTypes> kv_types_from_flags(std::string_view both, std::string_view k, std::string_view v);
// Whether `type` is stored in quantized blocks (q8_0, q4_0) rather than value by value.
bool kv_type_is_blocked(DType type);
// Values per quantization block of a row of heads of head_dim values: min(32, head_dim) for
// q8_0 / q4_0, 1 for f32 / f16 / bf16.
int64_t kv_block_values(DType type, int64_t head_dim);
// Whether `type` stores each head of head_dim values as one short block: q8_0 / q4_0 with
// head_dim under 32.
bool kv_type_short_blocks(DType type, int64_t head_dim);
// Bytes of one position's row of n_kv_heads heads of head_dim values in `type`.
int64_t kv_row_bytes(DType type, int64_t n_kv_heads, int64_t head_dim);
// Bytes of one position's K row plus V row.
int64_t kv_types_row_bytes(KvTypes types, int64_t n_kv_heads, int64_t head_dim);
// Whether rows of n_kv_heads heads of head_dim values can be stored in `types`: for a
// quantized type head_dim must be a multiple or a divisor of 32 (an even one for q4_0). The
// error names the type and the shape.
Status kv_types_check_shape(KvTypes types, int64_t n_kv_heads, int64_t head_dim);

}  // namespace tally
