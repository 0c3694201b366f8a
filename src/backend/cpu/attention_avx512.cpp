#include "backend/cpu/simd_half_avx512.h"
#include "backend/cpu/attention_simd.h"

namespace tally::cpu::detail {

void attention_task_avx512(const AttentionArgs& args, int64_t token, int64_t kv_head) {
  attention_task_impl<SimdKernels<Avx512Half>>(args, token, kv_head);
}

}  // namespace tally::cpu::detail
