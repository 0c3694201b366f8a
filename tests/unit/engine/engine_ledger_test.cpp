// The memory ledger: the engine's block count is what `tally plan` computes for the same
// settings, and the ledger matches what Engine::create really allocates (within 2%).
#include <gtest/gtest.h>
#include <malloc.h>

#include "support/memory_footprint.h"  // TALLY_SANITIZED_BUILD

#if TALLY_SANITIZED_BUILD
// ASan and TSan replace malloc (mallinfo2 then sees nothing); their allocator counts for
// itself. GCC ships no header for it.
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

#include "base/huge_page_buffer.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "plan/gguf_source.h"
#include "plan/plan.h"

namespace tally_test {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Bytes of memory the process allocated: every malloc arena and mmapped chunk, plus the
// buffers tally maps itself (the KV cache, repacked weights: base/huge_page_buffer.h).
int64_t heap_in_use() {
#if TALLY_SANITIZED_BUILD
  const auto heap = static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 mi = mallinfo2();
  const auto heap = static_cast<int64_t>(mi.uordblks + mi.hblkhd);
#endif
  return heap + tally::HugePageBuffer::bytes_in_use();
}

tally::plan::Plan plan_for(const tally::EngineConfig& c) {
  // What `tally plan -m MODEL --kv-type T --context C --concurrency S --block-size B
  // --max-batched-tokens N --memory M` computes.
  auto model = tally::plan::plan_model_from_gguf_path(c.model_path);
  EXPECT_TRUE(model.ok());
  tally::plan::PlanOptions o;
  o.kv_type = c.kv_type;
  o.context = c.max_model_len;
  o.concurrency = c.max_seqs;
  o.block_size = c.block_size;
  o.batch_tokens = c.max_batched_tokens;
  o.budget = c.memory_budget;
  auto p = tally::plan::compute_plan(*model, o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return *p;
}

class EngineLedger : public ::testing::TestWithParam<tally::KvTypes> {};

TEST_P(EngineLedger, BlockCountEqualsThePlanForTheSameBudget) {
  tally::EngineConfig c = stories_config();
  c.kv_type = GetParam();
  c.kv_cache_memory = 0;
  c.memory_budget = 300 * kMiB;  // 256 MiB of the plan's overhead, the rest weights and KV
  c.block_size = 32;
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  const tally::plan::Plan p = plan_for(c);
  const tally::MemoryLedger& l = engine->ledger();
  ASSERT_GT(p.n_blocks, 0);
  EXPECT_EQ(l.kv_blocks, p.n_blocks);
  EXPECT_EQ(l.token_capacity, p.token_capacity);
  EXPECT_EQ(l.kv_bytes_per_token, p.kv_bytes_per_token);
  EXPECT_EQ(l.kv_bytes, p.n_blocks * p.kv_block_bytes);
  EXPECT_EQ(l.weight_bytes_mapped + l.weight_bytes_owned, p.weight_bytes);
  EXPECT_EQ(l.block_size, 32);
  EXPECT_EQ(engine->metrics().kv_blocks_total, p.n_blocks);
  // The pool it sized works.
  EXPECT_TRUE(run_alone(*engine, greedy_request(make_prompt(20, 1), 8)).done);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, EngineLedger,
                         ::testing::Values(tally::DType::kF32, tally::DType::kF16,
                                           tally::DType::kBF16, tally::DType::kQ8_0,
                                           tally::DType::kQ4_0,
                                           tally::KvTypes(tally::DType::kQ8_0, tally::DType::kF16)));

TEST(EngineLedgerAlloc, LedgerMatchesWhatCreateAllocates) {
  tally::EngineConfig c = stories_config();
  c.kv_cache_memory = 48 * kMiB;
  c.max_batched_tokens = 256;
  const int64_t before = heap_in_use();
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  const int64_t allocated = heap_in_use() - before;
  const tally::MemoryLedger& l = engine->ledger();
  // Mapped weights live in the file mapping, not on the heap.
  const int64_t heap_ledger =
      l.weight_bytes_owned + l.activation_bytes + l.kv_bytes + l.other_bytes;
  EXPECT_NEAR(static_cast<double>(allocated), static_cast<double>(heap_ledger),
              0.02 * static_cast<double>(heap_ledger))
      << "allocated " << allocated << " B, the ledger says " << heap_ledger << " B";
  EXPECT_EQ(l.kv_blocks, 48 * kMiB / (16 * 1280));
  EXPECT_EQ(l.total(), l.weight_bytes_mapped + heap_ledger);
}

TEST(EngineLedgerAlloc, DefaultPoolHoldsMaxSeqsContexts) {
  tally::EngineConfig c = stories_config();
  c.kv_cache_memory = 0;
  c.memory_budget = 0;
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  // 16 sequences of 256 tokens in blocks of 16, well under the 4 GiB cap.
  EXPECT_EQ(engine->ledger().kv_blocks, 16 * 256 / 16);
}

// `tally plan` and the engine (serve, bench throughput) start from the same settings: one
// place, plan/run_defaults.h.
TEST(EngineLedgerDefaults, EngineAndPlanStartFromTheSameSettings) {
  const tally::EngineConfig e;
  const tally::plan::PlanOptions p;
  EXPECT_EQ(e.kv_type, tally::KvTypes(tally::DType::kF16));
  EXPECT_EQ(e.kv_type, p.kv_type);
  EXPECT_EQ(e.block_size, p.block_size);
  EXPECT_EQ(e.max_batched_tokens, p.batch_tokens);
  EXPECT_EQ(e.max_seqs, p.concurrency);
  EXPECT_EQ(e.max_model_len, p.context);
}

// With no flag but the model and a budget, every line of the engine's ledger is what
// `tally plan -m MODEL --memory 300MiB` prints; "other" (the block pool's bookkeeping) is part
// of the plan's overhead reserve. Buffers are plan/activations.h's terms on both sides, and
// the runner checks at creation that it allocated exactly them.
TEST(EngineLedgerDefaults, EveryLineOfTheLedgerIsThePlans) {
  tally::EngineConfig c;
  c.model_path = repo_path("models/stories260K.gguf");
  c.threads = 1;
  c.memory_budget = 300 * kMiB;
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  auto model = tally::plan::plan_model_from_gguf_path(c.model_path);
  ASSERT_TRUE(model.ok());
  tally::plan::PlanOptions o;
  o.budget = 300 * kMiB;
  auto p = tally::plan::compute_plan(*model, o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const tally::MemoryLedger& l = engine->ledger();
  EXPECT_EQ(l.weight_bytes_mapped + l.weight_bytes_owned, p->weight_bytes);
  EXPECT_EQ(l.activation_bytes, p->activation_bytes);
  EXPECT_EQ(l.kv_bytes, p->n_blocks * p->kv_block_bytes);
  EXPECT_EQ(l.kv_blocks, p->n_blocks);
  EXPECT_EQ(l.block_size, p->options.block_size);
  EXPECT_EQ(l.token_capacity, p->token_capacity);
  EXPECT_EQ(l.kv_bytes_per_token, p->kv_bytes_per_token);
  EXPECT_LE(l.other_bytes, p->overhead_bytes);
  EXPECT_EQ(engine->max_model_len(), p->options.context);
}

TEST(EngineLedgerAlloc, TooSmallABudgetIsAClearError) {
  tally::EngineConfig c = stories_config();
  c.kv_cache_memory = 0;
  c.memory_budget = 100 * kMiB;  // less than the plan's 256 MiB overhead
  auto engine = tally::Engine::create(c);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), tally::ErrorCode::kOutOfMemory);
  c = stories_config();
  c.max_model_len = 100000;
  EXPECT_EQ(tally::Engine::create(c).status().code(), tally::ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tally_test
