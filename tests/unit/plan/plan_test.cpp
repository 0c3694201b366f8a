#include "plan/plan.h"

#include <algorithm>
#include <regex>

#include <gtest/gtest.h>

#include "plan/plan_presets.h"
#include "plan/plan_report.h"

namespace tally::plan {
namespace {

// A toy llama small enough to check by hand: 2 layers, n_embd 64, 4 heads / 2 KV heads of
// 16 dims, ffn 128, vocab 100, untied.
PlanModel toy() {
  PlanModel m;
  m.name = "toy";
  m.source = "preset";
  m.architecture = "llama";
  m.n_layers = 2;
  m.n_embd = 64;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 16;
  m.n_ff = 128;
  m.n_vocab = 100;
  m.context_length = 256;
  m.native_type = DType::kF32;
  auto r = plan_model_finish(m);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return *r;
}

// f32 weights: embd 100*64, per layer 2 norms of 64 + q 64*64 + k, v 64*32 + o 64*64 +
// 3 ffn 64*128, final norm 64, output 100*64.
constexpr int64_t kToyParams = 6400 + 2 * (128 + 4096 + 2048 + 2048 + 4096 + 24576) + 64 + 6400;

PlanOptions toy_options() {
  PlanOptions o;
  o.context = 64;
  o.concurrency = 2;
  o.batch_tokens = 8;
  o.overhead_bytes = 1000;
  return o;
}

// The activations of toy_options(), term by term (see activations.h).
// 8 tokens a step, 2 rows (one per sequence), 2 sequences of 64 tokens in 4 blocks.
constexpr int64_t kToyActivations = 8 * 4 * 3          // token ids, positions, sequence index
                                    + 2 * 16           // batch rows (spans)
                                    + 2 * 4 * 4        // logit rows, row logits, row last, slots
                                    + 8 * 64 * 4 * 2   // hidden, normed
                                    + 8 * 64 * 4       // q
                                    + 8 * 32 * 4 * 2   // k, v
                                    + 8 * 64 * 4       // attention out
                                    + 8 * 128 * 4 * 2  // gate, up
                                    + 8 * 16 * 4 * 2   // rope cos, sin [8][16]
                                    + 8 * 8            // kv slots (i64)
                                    + 8 * 16           // block table views (spans)
                                    + 2 * 100 * 4      // logits [2][100]
                                    + 8 * 4            // step row tokens [8]
                                    + 2 * 4 * 4;       // step block tables [2][4]

// Every layer windowed (llama with a sliding window): a sequence holds the blocks from its
// window's start through its step's last token, at most ceil((window - 1 + batch) / block) + 1.
TEST(ComputePlan, FullWindowCapsTheKvOfASequence) {
  PlanModel m = toy();
  m.kv_window = 20;
  PlanOptions o = toy_options();
  o.context = 256;  // 16 blocks of 16 without the window
  auto p = compute_plan(m, o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->blocks_per_sequence, (20 - 1 + 8 + 15) / 16 + 1);  // 3
  EXPECT_EQ(p->kv_bytes_requested, 2 * 3 * 4096);
  EXPECT_NE(plan_table(*p).find("256 tokens, a window of 20 on every layer"), std::string::npos) << plan_table(*p);
  // The runner's block tables still span the context.
  auto full = compute_plan(toy(), o);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->blocks_per_sequence, 16);
  EXPECT_EQ(p->activation_bytes, full->activation_bytes);
  // With a budget, any context fits once each sequence has its window's blocks.
  o.budget = p->required_bytes;
  p = compute_plan(m, o);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->fits);
  EXPECT_EQ(p->max_context, 256);
  EXPECT_EQ(p->max_concurrency, 2);
  m.kv_window = 1000;  // wider than the context: no cap
  p = compute_plan(m, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->blocks_per_sequence, 16);
}

TEST(ComputePlan, ToyLedgerByHand) {
  const PlanModel m = toy();
  EXPECT_EQ(m.n_params(), kToyParams);
  auto p = compute_plan(m, toy_options());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->weight_bytes, kToyParams * 4);
  EXPECT_EQ(p->weight_bytes_model, kToyParams * 4);
  EXPECT_EQ(p->activation_bytes, kToyActivations);
  EXPECT_EQ(p->activation_terms.size(), 23u);
  EXPECT_EQ(p->kv_bytes_per_token, 2 * 2 * 2 * 16 * 2);  // 256 B
  EXPECT_EQ(p->kv_block_bytes, 16 * 256);
  EXPECT_EQ(p->blocks_per_sequence, 4);
  EXPECT_EQ(p->kv_bytes_requested, 2 * 4 * 4096);
  EXPECT_EQ(p->required_bytes, kToyParams * 4 + kToyActivations + 1000 + 2 * 4 * 4096);
  EXPECT_FALSE(p->has_budget);
}

TEST(ComputePlan, StepTokensNeverExceedTheResidentTokens) {
  PlanOptions o = toy_options();
  o.concurrency = 1;
  o.context = 5;  // one sequence of 5 tokens: a step holds at most 5
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->step_tokens, 5);
  EXPECT_EQ(p->activation_terms[0].shape, "[5] i32");
  const auto logits = std::find_if(p->activation_terms.begin(), p->activation_terms.end(),
                                   [](const auto& t) { return t.name == "logits"; });
  ASSERT_NE(logits, p->activation_terms.end());
  EXPECT_EQ(logits->shape, "[1][100] f32");  // one row: one sequence
  o.context = 64;
  auto q = compute_plan(toy(), o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->step_tokens, 8);  // batch_tokens
}

TEST(ComputePlan, CapacityByHand) {
  PlanOptions o = toy_options();
  // Room for exactly 10 blocks and 100 bytes more.
  o.budget = kToyParams * 4 + kToyActivations + 1000 + 10 * 4096 + 100;
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->model_fits);
  EXPECT_EQ(p->kv_budget_bytes, 10 * 4096 + 100);
  EXPECT_EQ(p->n_blocks, 10);
  EXPECT_EQ(p->token_capacity, 160);
  EXPECT_EQ(p->max_concurrency, 2);  // 10 blocks / 4 per sequence
  EXPECT_EQ(p->max_context, 80);     // 10 blocks / 2 sequences = 5 blocks of 16
  EXPECT_TRUE(p->fits);
  EXPECT_NE(plan_table(*p).find("fits: 2 sequences of 64 tokens"), std::string::npos);

  // A context that leaves a partial block still takes whole blocks: 65 tokens = 5 blocks.
  o.context = 65;
  auto q = compute_plan(toy(), o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->blocks_per_sequence, 5);
  EXPECT_EQ(q->max_concurrency, 10 / 5);
}

TEST(ComputePlan, HostOffloadTierIsWholeBlocksOffTheBudget) {
  PlanOptions o = toy_options();
  o.budget = kToyParams * 4 + kToyActivations + 1000 + 10 * 4096 + 100;
  // Blocks of 4096 KV bytes + 16 token ids: 3.5 of them ask for 3.
  o.kv_offload_host_bytes = 3 * (4096 + 64) + 2000;
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->kv_offload_bytes, 3 * (4096 + 64));
  EXPECT_EQ(p->kv_budget_bytes, 10 * 4096 + 100 - 3 * (4096 + 64));
  EXPECT_EQ(p->n_blocks, 6);
  EXPECT_NE(plan_table(*p).find("KV offload, host (3 blocks)"), std::string::npos);
}

TEST(ComputePlan, MaxContextIsCappedByTheModel) {
  PlanOptions o = toy_options();
  o.budget = int64_t{1} << 30;
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_GT(p->n_blocks / o.concurrency * o.block_size, 256);
  EXPECT_EQ(p->max_context, 256);
}

TEST(ComputePlan, BudgetBelowWeightsDoesNotFit) {
  PlanOptions o = toy_options();
  o.budget = 100'000;  // the weights alone are 347,392 bytes
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->model_fits);
  EXPECT_FALSE(p->fits);
  EXPECT_EQ(p->shortfall_bytes, kToyParams * 4 + kToyActivations + 1000 - 100'000);
  EXPECT_EQ(p->kv_budget_bytes, 0);
  EXPECT_EQ(p->n_blocks, 0);
  EXPECT_EQ(p->token_capacity, 0);
  EXPECT_EQ(p->max_concurrency, 0);
  EXPECT_EQ(p->max_context, 0);
  const std::string table = plan_table(*p);
  EXPECT_NE(table.find("does not fit"), std::string::npos) << table;
  EXPECT_FALSE(std::regex_search(table, std::regex("-[0-9]"))) << "a negative figure:\n" << table;
  const auto j = plan_json(*p);
  EXPECT_FALSE(j["budget"]["model_fits"].get<bool>());
  EXPECT_EQ(j["budget"]["n_blocks"].get<int64_t>(), 0);
}

TEST(ComputePlan, KvThatDoesNotFitReportsTheShortfall) {
  PlanOptions o = toy_options();
  o.budget = kToyParams * 4 + kToyActivations + 1000 + 7 * 4096;  // 8 blocks are asked for
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->model_fits);
  EXPECT_FALSE(p->fits);
  EXPECT_EQ(p->n_blocks, 7);
  EXPECT_EQ(p->max_concurrency, 1);
  EXPECT_EQ(p->shortfall_bytes, 4096);
}

TEST(ComputePlan, TensorParallelSplitsWeightsHeadsAndKv) {
  PlanOptions o = toy_options();
  o.tp = 2;
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->heads_per_rank, 2);
  EXPECT_EQ(p->kv_heads_per_rank, 1);
  EXPECT_EQ(p->ff_per_rank, 64);
  EXPECT_FALSE(p->kv_replicated);
  // Per rank: embedding and output 50 of 100 rows, norms whole, the rest halved.
  const int64_t per_layer = 128 * 4 + (4096 + 2048 + 2048 + 4096 + 24576) * 4 / 2;
  EXPECT_EQ(p->weight_bytes, 2 * 50 * 64 * 4 + 2 * per_layer + 64 * 4);
  EXPECT_EQ(p->weight_bytes_model, kToyParams * 4);
  EXPECT_EQ(p->kv_bytes_per_token, 128);
  EXPECT_EQ(p->kv_bytes_per_token_all_ranks, 256);

  // llama-3-70b over 8 ranks: 1 KV head each, 40 KiB per token per rank.
  auto big = plan_preset("llama-3-70b");
  ASSERT_TRUE(big.ok());
  PlanOptions o8;
  o8.tp = 8;
  auto p8 = compute_plan(*big, o8);
  ASSERT_TRUE(p8.ok());
  EXPECT_EQ(p8->kv_bytes_per_token, 40 * 1024);
  EXPECT_NEAR(static_cast<double>(p8->weight_bytes), p8->weight_bytes_model / 8.0,
              0.001 * p8->weight_bytes_model);
}

TEST(ComputePlan, FewerKvHeadsThanRanksReplicates) {
  auto m = plan_preset("llama-3-70b");  // 8 KV heads
  ASSERT_TRUE(m.ok());
  PlanOptions o;
  o.tp = 16;
  auto p = compute_plan(*m, o);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->kv_replicated);
  EXPECT_EQ(p->kv_heads_per_rank, 1);
  EXPECT_EQ(p->kv_bytes_per_token, 40 * 1024);  // same as tp 8: the head is replicated
  EXPECT_EQ(p->kv_bytes_per_token_all_ranks, 16 * 40 * 1024);
  ASSERT_FALSE(p->notes.empty());
  EXPECT_NE(p->notes.back().find("replicated on 2 ranks"), std::string::npos);
}

TEST(ComputePlan, InvalidOptionsAreErrors) {
  auto m = plan_preset("llama-3-70b");  // 64 heads, 8 KV heads, ffn 28672
  ASSERT_TRUE(m.ok());
  auto with = [&](auto edit) {
    PlanOptions o;
    edit(o);
    return compute_plan(*m, o);
  };
  auto tp3 = with([](PlanOptions& o) { o.tp = 3; });
  ASSERT_FALSE(tp3.ok());
  EXPECT_NE(tp3.status().message().find("64 attention heads"), std::string::npos);
  auto tp128 = with([](PlanOptions& o) { o.tp = 128; });  // 128 does not divide 64 heads
  EXPECT_FALSE(tp128.ok());
  EXPECT_FALSE(with([](PlanOptions& o) { o.block_size = 0; }).ok());
  EXPECT_FALSE(with([](PlanOptions& o) { o.concurrency = 0; }).ok());
  EXPECT_FALSE(with([](PlanOptions& o) { o.batch_tokens = -1; }).ok());
  EXPECT_FALSE(with([](PlanOptions& o) { o.budget = -5; }).ok());
  auto kv4k = with([](PlanOptions& o) { o.kv_type = DType::kQ4_K; });
  ASSERT_FALSE(kv4k.ok());
  EXPECT_EQ(kv4k.status().code(), ErrorCode::kUnsupported);
  auto file = with([](PlanOptions& o) { o.weights = *weight_format_from_name("file"); });
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("needs a GGUF"), std::string::npos);
}

TEST(ComputePlan, KvTypeNames) {
  EXPECT_EQ(*kv_type_from_name("F16"), DType::kF16);
  EXPECT_EQ(*kv_type_from_name("bf16"), DType::kBF16);
  EXPECT_EQ(*kv_type_from_name("f32"), DType::kF32);
  EXPECT_EQ(*kv_type_from_name("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(*kv_type_from_name("q4_0"), DType::kQ4_0);
  for (const char* bad : {"int8", "f8", "q4_K"}) {
    const auto st = kv_type_from_name(bad).status();
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("f32, f16, bf16, q8_0, q4_0"), std::string::npos) << st.message();
  }
}

// KV bytes per token for every KV type, K and V apart: the KvStorageShape arithmetic.
TEST(ComputePlan, QuantizedKvTypesSizeTheirBlocks) {
  const auto per_token = [](KvTypes t) {
    PlanOptions o = toy_options();
    o.kv_type = t;
    auto p = compute_plan(toy(), o);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? p->kv_bytes_per_token : -1;
  };
  const int64_t f16 = per_token(DType::kF16);
  EXPECT_EQ(per_token(DType::kF32), 2 * f16);
  // 2 heads of 16 a row, each one block: 18 bytes in q8_0, 10 in q4_0, 32 in f16.
  EXPECT_EQ(per_token(DType::kQ8_0) * 32, f16 * 18);
  EXPECT_EQ(per_token(DType::kQ4_0) * 32, f16 * 10);
  EXPECT_EQ(per_token({DType::kQ8_0, DType::kF16}) * 128, f16 * (36 + 64));
}

TEST(ComputePlan, LongerContextThanTrainedIsNoted) {
  PlanOptions o = toy_options();
  o.context = 1000;
  auto p = compute_plan(toy(), o);
  ASSERT_TRUE(p.ok());
  ASSERT_FALSE(p->notes.empty());
  EXPECT_NE(p->notes.front().find("longer than the model's trained 256"), std::string::npos);
}

TEST(PlanReport, TableAndJsonCarryTheFigures) {
  auto m = plan_preset("llama-3-8b");
  ASSERT_TRUE(m.ok());
  PlanOptions o;
  o.weights = *weight_format_from_name("f16");
  o.budget = int64_t{80} << 30;
  o.concurrency = 4;
  auto p = compute_plan(*m, o);
  ASSERT_TRUE(p.ok());
  const std::string table = plan_table(*p);
  EXPECT_NE(table.find("llama-3-8b (preset, llama)"), std::string::npos) << table;
  EXPECT_NE(table.find("128.00 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("= 2 x 32 layers x 8 KV heads x 128 dims x 2 B (f16)"), std::string::npos);
  EXPECT_NE(table.find("80.00 GiB"), std::string::npos);
  EXPECT_NE(table.find("8,030,261,248"), std::string::npos);
  EXPECT_NE(table.find("fits: 4 sequences of 8192 tokens"), std::string::npos) << table;

  const auto j = plan_json(*p);
  EXPECT_EQ(j["kv"]["bytes_per_token"].get<int64_t>(), 131072);
  EXPECT_EQ(j["model"]["n_params"].get<int64_t>(), 8'030'261'248);
  EXPECT_EQ(j["weights"]["bytes_per_rank"].get<int64_t>(), p->weight_bytes);
  EXPECT_EQ(j["budget"]["n_blocks"].get<int64_t>(), p->n_blocks);
  EXPECT_EQ(j["activations"]["terms"].size(), p->activation_terms.size());
  EXPECT_EQ(j["options"]["budget_bytes"].get<int64_t>(), int64_t{80} << 30);
  // Ledger identity: the budget is spent exactly as the table says.
  EXPECT_EQ(p->weight_bytes + p->activation_bytes + p->overhead_bytes + p->kv_budget_bytes,
            p->budget_bytes);
  EXPECT_LE(p->n_blocks * p->kv_block_bytes, p->kv_budget_bytes);
  EXPECT_GT((p->n_blocks + 1) * p->kv_block_bytes, p->kv_budget_bytes);
}

}  // namespace
}  // namespace tally::plan
