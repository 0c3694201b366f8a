#include "backend/cpu/simd_half_avx512.h"
#include "backend/cpu/attention_int8_avx512.h"
#include "backend/cpu/attention_simd.h"
#include "backend/cpu/attention_tile.h"

namespace tally::cpu::detail {

void attention_task_avx512(const AttentionArgs& args, int64_t token, int64_t kv_head) {
  attention_task_impl<SimdKernels<Avx512Half, Int8OpsAvx512>>(args, token, kv_head);
}

void attention_token_task_avx512(const AttentionArgs& args, int64_t token) {
  attention_token_impl<SimdKernels<Avx512Half, Int8OpsAvx512>>(args, token);
}

void attention_tile_avx512(const AttentionArgs& args, int64_t token_begin, int64_t n_tokens,
                           int64_t kv_head) {
  attention_tile_impl<Avx512Half>(args, token_begin, n_tokens, kv_head);
}

}  // namespace tally::cpu::detail
