// A token's logits do not depend on how its prompt was cut, for the super-block weight types
// (q4_K, q6_K, q5_K, q3_K, q2_K, iq4_xs): a 12-token prompt in one forward (its matrices
// through the AVX-512 GEMM where the CPU has it: 8 tokens or more), in chunks of 4 + 8, and
// as 11 tokens then the last one decoded alone (the per-row kernels) give the same bits.
#include <cstdio>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "io/gguf_writer.h"
#include "model/model.h"
#include "plan/plan_model.h"
#include "support/test_data.h"
#include "tiny_vocab.h"
#include "synth/synthetic_model.h"

namespace tally {
namespace {

synth::SyntheticModelSpec tiny_llama() {
  plan::PlanModel m;
  m.name = "tiny-kquant";
  m.architecture = "llama";
  m.n_layers = 2;
  m.n_embd = 256;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 64;
  m.n_ff = 512;
  m.n_vocab = 300;
  m.context_length = 256;
  synth::SyntheticModelSpec spec;
  spec.shape = *plan::plan_model_finish(m);
  return spec;
}

// Logits of the prompt's last token, the prompt fed in chunks of the given sizes.
std::vector<float> last_logits(const Model& model, const std::vector<int32_t>& prompt,
                               const std::vector<size_t>& chunks) {
  auto kv = KvStorage::create(KvStorageShape::for_model(model.config(), 4, 16));
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  ForwardScratch scratch(model.config(), 16);
  ThreadPool pool(2);
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const std::vector<BatchSequence> seqs = {{table}};
  std::vector<float> logits(static_cast<size_t>(model.config().n_vocab));
  size_t begin = 0;
  for (size_t n : chunks) {
    std::vector<int32_t> tokens, positions, seq_index;
    for (size_t i = begin; i < begin + n; ++i) {
      tokens.push_back(prompt[i]);
      positions.push_back(static_cast<int32_t>(i));
      seq_index.push_back(0);
    }
    const std::vector<int32_t> logit_rows = {static_cast<int32_t>(n) - 1};
    const Batch batch{tokens, positions, seq_index, seqs, logit_rows};
    const Status st = model.forward(batch, *kv, scratch, pool, logits.data());
    EXPECT_TRUE(st.ok()) << st.to_string();
    begin += n;
  }
  EXPECT_EQ(begin, prompt.size());
  return logits;
}

TEST(KQuantPrefillDecode, ChunkingDoesNotChangeTheLogits) {
  const std::vector<int32_t> prompt = {1, 17, 250, 42, 9, 77, 3, 120, 5, 299, 64, 11};
  for (const char* type : {"q4_k_m", "q5_k_m", "q3_k", "q2_k", "iq4_xs"}) {
    SCOPED_TRACE(type);
    synth::SyntheticOptions o;
    o.spec = tiny_llama();
    o.type = type;
    o.seed = 5;
    o.n_threads = 2;
    o.vocab_gguf = write_tiny_vocab("kquant_vocab.gguf");
    o.output_path = fmt::format("{}/kquant_prefill_{}.gguf", tally_test::temp_dir(), type);
    auto written = synth::write_synthetic_model(o);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    auto model = Model::load(o.output_path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const auto whole = last_logits(**model, prompt, {12});
    const auto chunked = last_logits(**model, prompt, {4, 8});
    const auto decoded = last_logits(**model, prompt, {11, 1});
    EXPECT_EQ(0, std::memcmp(whole.data(), chunked.data(), whole.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(whole.data(), decoded.data(), whole.size() * sizeof(float)));
    std::remove(o.output_path.c_str());
  }
}

}  // namespace
}  // namespace tally
