#include "tensor/kv_types.h"

#include <tuple>

#include <fmt/format.h>

#include "base/ascii.h"
#include "base/check.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace tally {

namespace {

constexpr DType kKvTypeList[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                 DType::kQ4_0};
constexpr std::string_view kKvTypeNames = "f32, f16, bf16, q8_0, q4_0";

Status kv_type_check_shape(DType type, int64_t n_kv_heads, int64_t head_dim) {
  if (!kv_type_is_blocked(type)) return Status::ok_status();
  if (n_kv_heads <= 0 || head_dim <= 0)
    return make_error(ErrorCode::kInvalidArgument, "kv cache: {} heads of {} values", n_kv_heads, head_dim);
  if (head_dim % kQBlock != 0 && !quant_block_values_valid(type, head_dim))
    return make_error(ErrorCode::kUnsupported,
                      "kv cache: type {} stores heads in blocks of 32 values, or one block a head "
                      "of a divisor of 32{}: {} heads of {} values do not split into them (use f16)",
                      dtype_name(type), type == DType::kQ4_0 ? " (even)" : "", n_kv_heads, head_dim);
  return Status::ok_status();
}

}  // namespace

bool kv_type_is_valid(DType type) {
  for (DType t : kKvTypeList)
    if (t == type) return true;
  return false;
}

Status kv_types_supported(KvTypes types) {
  for (DType t : {types.k, types.v})
    if (!kv_type_is_valid(t))
      return make_error(ErrorCode::kUnsupported, "kv type {} is not supported ({})", dtype_name(t),
                        kKvTypeNames);
  return Status::ok_status();
}

std::string kv_types_name(KvTypes types) {
  if (types.k == types.v) return std::string(dtype_name(types.k));
  return fmt::format("{}/{}", dtype_name(types.k), dtype_name(types.v));
}

Result<DType> kv_type_from_name(std::string_view name) {
  const std::string n = ascii_lower(name);
  for (DType t : kKvTypeList)
    if (dtype_name(t) == n) return t;
  return make_error(ErrorCode::kInvalidArgument, "unknown kv type '{}' ({})", name, kKvTypeNames);
}

Result<KvTypes> kv_types_from_flags(std::string_view both, std::string_view k, std::string_view v) {
  auto parsed = kv_type_from_name(both);
  if (!parsed.ok()) return parsed.status().with_context("--kv-type");
  KvTypes types(*parsed);
  for (auto [text, flag, field] : {std::tuple{k, "--kv-type-k", &types.k}, std::tuple{v, "--kv-type-v", &types.v}}) {
    if (text.empty()) continue;
    auto one = kv_type_from_name(text);
    if (!one.ok()) return one.status().with_context(flag);
    *field = *one;
  }
  return types;
}

bool kv_type_is_blocked(DType type) { return dtype_info(type).block_size > 1; }

int64_t kv_block_values(DType type, int64_t head_dim) {
  if (!kv_type_is_blocked(type)) return 1;
  return head_dim < kQBlock ? head_dim : kQBlock;
}

bool kv_type_short_blocks(DType type, int64_t head_dim) {
  return kv_type_is_blocked(type) && head_dim < kQBlock;
}

int64_t kv_row_bytes(DType type, int64_t n_kv_heads, int64_t head_dim) {
  TALLY_DCHECK(kv_type_is_valid(type) && kv_type_check_shape(type, n_kv_heads, head_dim).ok(),
               "kv row of {} heads of {} values of {}", n_kv_heads, head_dim, dtype_name(type));
  return row_blocks_bytes(type, n_kv_heads * head_dim, kv_block_values(type, head_dim));
}

int64_t kv_types_row_bytes(KvTypes types, int64_t n_kv_heads, int64_t head_dim) {
  return kv_row_bytes(types.k, n_kv_heads, head_dim) + kv_row_bytes(types.v, n_kv_heads, head_dim);
}

Status kv_types_check_shape(KvTypes types, int64_t n_kv_heads, int64_t head_dim) {
  if (Status st = kv_types_supported(types); !st.ok()) return st.with_context("kv cache");
  for (DType t : {types.k, types.v}) TALLY_RETURN_IF_ERROR(kv_type_check_shape(t, n_kv_heads, head_dim));
  return Status::ok_status();
}

}  // namespace tally
