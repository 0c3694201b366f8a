#include "tensor/kv_types.h"

#include <tuple>

#include <fmt/format.h>

#include "base/ascii.h"

namespace tally {

namespace {

constexpr DType kKvTypeList[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                 DType::kQ4_0};
constexpr std::string_view kKvTypeNames = "f32, f16, bf16, q8_0, q4_0";

Status kv_type_check_shape(DType type, int64_t n_kv_heads, int64_t head_dim) {
  const int64_t block = dtype_info(type).block_size;
  if (block == 1) return Status::ok_status();
  if (n_kv_heads <= 0 || head_dim <= 0)
    return make_error(ErrorCode::kInvalidArgument, "kv cache: {} heads of {} values", n_kv_heads, head_dim);
  if ((n_kv_heads * head_dim) % block != 0 || (head_dim % block != 0 && block % head_dim != 0))
    return make_error(ErrorCode::kUnsupported,
                      "kv cache: type {} stores blocks of {} values: {} heads of {} values do not "
                      "split into them (use f16)",
                      dtype_name(type), block, n_kv_heads, head_dim);
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

int64_t kv_types_row_bytes(KvTypes types, int64_t row) {
  return dtype_row_bytes(types.k, row) + dtype_row_bytes(types.v, row);
}

Status kv_types_check_shape(KvTypes types, int64_t n_kv_heads, int64_t head_dim) {
  if (Status st = kv_types_supported(types); !st.ok()) return st.with_context("kv cache");
  for (DType t : {types.k, types.v}) TALLY_RETURN_IF_ERROR(kv_type_check_shape(t, n_kv_heads, head_dim));
  return Status::ok_status();
}

}  // namespace tally
