// A llama GGUF that declares `llama.attention.sliding_window` (Mistral 7B v0.1) attends over
// the window on every layer: against the independent reference forward, with the window
// mattering (a window of 5 over 20 tokens), and greedy output batch- and thread-invariant.
#include <gtest/gtest.h>

#include "arch_check.h"
#include "io/gguf.h"
#include "model/model.h"

namespace tally_test {
namespace {

const std::vector<int32_t> kTokens = {3, 17, 39, 0, 22, 22, 8, 31, 5, 12, 19, 2, 36, 27, 11, 4, 9, 33, 1, 25};

TinySpec windowed_llama() {
  TinySpec s;
  s.seed = 41;
  s.extra = [](tally::io::GgufWriter& w) { w.set_u32("llama.attention.sliding_window", 5); };
  return s;
}

RefSpec windowed_ref() {
  RefSpec r{32, 48, 2, 4, 2, 8, 40};
  r.window = 5;
  r.all_local = true;
  return r;
}

TEST(LlamaWindow, EveryLayerAttendsOverTheWindow) {
  const LoadedTinyModel tiny = load_tiny_model(windowed_llama());
  ASSERT_TRUE(tiny.model);
  const tally::ModelConfig& c = tiny.model->config();
  EXPECT_EQ(c.sliding_window, 5);
  EXPECT_EQ(c.full_window(), 5);
  EXPECT_TRUE(c.is_local_layer(0) && c.is_local_layer(1));
  expect_matches_reference(*tiny.model, windowed_ref(), kTokens);
  RefSpec full = windowed_ref();
  full.window = 0;
  EXPECT_GT(reference_max_diff(*tiny.model, full, kTokens), 1e-2f);
  expect_batch_and_thread_invariant(*tiny.model, kTokens);
}

TEST(LlamaWindow, NoKeyNoWindowAndGemmaHasNoFullWindow) {
  const LoadedTinyModel plain = load_tiny_model(TinySpec{});
  ASSERT_TRUE(plain.model);
  EXPECT_EQ(plain.model->config().full_window(), 0);
  EXPECT_FALSE(plain.model->config().is_local_layer(0));
  TinySpec gemma;
  gemma.arch = "gemma2";
  gemma.post_norms = true;
  const LoadedTinyModel g = load_tiny_model(gemma);
  ASSERT_TRUE(g.model);
  EXPECT_GT(g.model->config().sliding_window, 0);
  EXPECT_EQ(g.model->config().full_window(), 0);  // its global layers read every position
}

}  // namespace
}  // namespace tally_test
