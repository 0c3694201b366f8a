// matmul_shared_input: a group of products of one input (Q/K/V, gate/up) gives each output the
// bits of its own matmul() call, whatever the mix of weight types (float, 32-blocks, K-blocks,
// repacked or not), row counts that are not multiples of the task size, token counts and
// threads.
#include <cstring>

#include <gtest/gtest.h>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_repack.h"
#include "matmul_test_util.h"

namespace tally::cpu {
namespace {

using test::make_acts;
using test::make_weights;

TEST(MatmulSharedInput, EachOutputEqualsItsOwnMatmul) {
  const int64_t n_in = 512;
  // Like a q4_k_m layer's Q (q4_K), K (q4_K), V (q6_K), plus the other forms.
  const auto wq = make_weights(DType::kQ4_K, 40, n_in, 1);
  const auto wk = make_weights(DType::kQ4_K, 24, n_in, 2);
  const auto wv = make_weights(DType::kQ6_K, 24, n_in, 3);
  const auto w8 = make_weights(DType::kQ8_0, 72, n_in, 4);
  const auto w4 = make_weights(DType::kQ4_0, 33, n_in, 5);
  const auto wh = make_weights(DType::kF16, 17, n_in, 6);
  ThreadPool build_pool(2);
  const RepackedWeights r8(w8.view, build_pool);
  const RepackedWeights r4(w4.view, build_pool);
  const std::vector<std::vector<const WeightMatrix*>> groups = {
      {&wq.view, &wk.view, &wv.view},
      {&r8.view(), &r4.view()},
      {&w8.view, &wh.view, &r4.view(), &wq.view},
      {&wh.view}};
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (int64_t n_tokens : {1, 3, 70}) {
      const auto x = make_acts(n_tokens, n_in, 9 + static_cast<uint32_t>(n_tokens));
      for (size_t g = 0; g < groups.size(); ++g) {
        SCOPED_TRACE(testing::Message() << "group " << g << " tokens " << n_tokens << " threads "
                                        << threads);
        std::vector<std::vector<float>> together, alone;
        std::vector<MatmulOutput> outs;
        for (const WeightMatrix* w : groups[g]) {
          together.emplace_back(n_tokens * w->n_out, -1.0f);
          alone.emplace_back(n_tokens * w->n_out, -2.0f);
        }
        for (size_t i = 0; i < groups[g].size(); ++i) outs.push_back({groups[g][i], together[i].data()});
        matmul_shared_input(outs, x.data(), n_tokens, pool);
        for (size_t i = 0; i < groups[g].size(); ++i) {
          matmul(*groups[g][i], x.data(), n_tokens, alone[i].data(), pool);
          ASSERT_EQ(0, std::memcmp(together[i].data(), alone[i].data(),
                                   together[i].size() * sizeof(float)))
              << "output " << i << " (" << dtype_name(groups[g][i]->type) << ")";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tally::cpu
