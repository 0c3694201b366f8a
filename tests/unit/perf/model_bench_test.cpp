// tally bench's arithmetic (bytes per decode step, FLOPs, ceilings) on the in-tree stories260K
// model, and a short real run: every test gets a row with positive figures and the ceilings
// the documented formulas give. No speed is asserted.
#include "perf/model_bench.h"

#include <gtest/gtest.h>

#include <string>

#include "perf/model_bench_report.h"
#include "support/test_data.h"

namespace tally::perf {
namespace {

class ModelBenchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::load(tally_test::repo_path("models/stories260K.gguf"));
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static const Model* model_;
};
const Model* ModelBenchTest::model_ = nullptr;

// Quick settings: tiny buffers and samples, so the run takes well under a second.
ModelBenchOptions quick_options() {
  ModelBenchOptions o;
  o.prompt_lengths = {8, 20};
  o.batch_sizes = {1, 3};
  o.ubatch = 8;  // 20 tokens: chunks of 8, 8, 4
  o.kv_len = 17;
  o.repetitions = 2;
  o.warmup = 0;
  o.bandwidth_bytes = size_t{1} << 20;
  o.peak.repetitions = 2;
  o.peak.warmup = 0;
  o.peak.seconds_per_sample = 0.002;
  o.peak.rows_per_thread = 16;
  o.instruction_peak.repetitions = 2;
  o.instruction_peak.warmup = 0;
  o.instruction_peak.seconds_per_sample = 0.002;
  return o;
}

TEST_F(ModelBenchTest, CostCountsEveryMatrixOnce) {
  const ModelConfig& c = model_->config();
  const ModelCost cost = model_cost(*model_, DType::kF16);
  // stories260K is all f32: the layers' seven matrices and the (tied) output.
  const int64_t per_layer =
      2 * c.n_embd * c.q_dim() + 2 * c.n_embd * c.kv_dim() + 3 * c.n_embd * c.n_ff;
  const int64_t params = c.n_layers * per_layer + c.n_vocab * c.n_embd;
  EXPECT_EQ(cost.weight_bytes, params * 4);
  ASSERT_EQ(cost.weight_bytes_by_type.size(), 1u);
  EXPECT_EQ(cost.weight_bytes_by_type[0].first, DType::kF32);
  EXPECT_DOUBLE_EQ(cost.layer_flops, 2.0 * static_cast<double>(c.n_layers * per_layer));
  EXPECT_DOUBLE_EQ(cost.output_flops, 2.0 * static_cast<double>(c.n_vocab * c.n_embd));
  EXPECT_EQ(cost.kv_bytes_per_token, 2 * c.n_layers * c.kv_dim() * 2);  // f16: 2 bytes
  EXPECT_EQ(cost.embd_row_bytes, c.n_embd * 4);
  // B sequences at L positions read the weights once, KV of L + 1 positions each.
  EXPECT_DOUBLE_EQ(decode_bytes_per_step(cost, 4, 99),
                   static_cast<double>(cost.weight_bytes + 4 * 100 * cost.kv_bytes_per_token +
                                       4 * cost.embd_row_bytes));
}

// MoE: a decode step reads the dense parts and only the experts its tokens chose: k at batch
// 1, the uniform-routing expectation E (1 - (1 - k/E)^B) beyond, never more than E.
TEST(ModelBenchMoe, DecodeBytesCountTheActiveExpertsOnly) {
  ModelCost cost;
  cost.weight_bytes = 1000;
  cost.expert_bytes = 100;
  cost.n_expert = 8;
  cost.n_expert_used = 2;
  EXPECT_DOUBLE_EQ(moe_expected_active_experts(cost, 1), 2.0);
  EXPECT_DOUBLE_EQ(moe_expected_active_experts(cost, 2), 8.0 * (1.0 - 0.75 * 0.75));
  EXPECT_LT(moe_expected_active_experts(cost, 64), 8.0);
  EXPECT_GT(moe_expected_active_experts(cost, 64), 7.99);
  EXPECT_DOUBLE_EQ(decode_bytes_per_step(cost, 1, 0), 1000.0 + 2 * 100.0);
  cost.n_expert = 0;  // dense: nothing added
  EXPECT_DOUBLE_EQ(moe_expected_active_experts(cost, 4), 0.0);
}

TEST_F(ModelBenchTest, ComputeCeilingsFollowThePeaks) {
  const ModelCost cost = model_cost(*model_, DType::kF32);
  KernelPeak peak;
  peak.type = DType::kF32;
  peak.gflops.median = 10.0;  // 1e10 FLOP/s
  const std::vector<KernelPeak> peaks = {peak};
  const double prompt_seconds = (100 * cost.layer_flops + cost.output_flops) / 1e10;
  EXPECT_NEAR(prefill_ceiling_tok_s(cost, 100, peaks), 100 / prompt_seconds,
              1e-9 * (100 / prompt_seconds));
  const double token_seconds = (cost.layer_flops + cost.output_flops) / 1e10;
  EXPECT_NEAR(decode_compute_ceiling_tok_s(cost, peaks), 1 / token_seconds, 1e-9 / token_seconds);
  peak.type = DType::kQ8_0;  // no peak for f32: unknown
  EXPECT_EQ(prefill_ceiling_tok_s(cost, 100, {peak}), 0.0);
}

TEST_F(ModelBenchTest, ShortRunFillsEveryRow) {
  ThreadPool pool(2);
  const ModelBenchOptions o = quick_options();
  std::vector<std::string> lines;
  auto r = run_model_bench(*model_, pool, o, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // bandwidth, the instruction peaks, one kernel peak (f32), four tests
  EXPECT_EQ(lines.size(), 1u + r->instruction_peaks.size() + 1u + 4u);
  ASSERT_EQ(r->rows.size(), 4u);
  const BenchKind kinds[] = {BenchKind::kPrefill, BenchKind::kPrefill, BenchKind::kDecode,
                             BenchKind::kDecode};
  const int64_t ns[] = {8, 20, 1, 3};
  for (size_t i = 0; i < 4; ++i) {
    const BenchRow& row = r->rows[i];
    EXPECT_EQ(row.kind, kinds[i]);
    EXPECT_EQ(row.n, ns[i]);
    EXPECT_EQ(row.tok_s.n, 2);
    EXPECT_GT(row.tok_s.median, 0.0);
    EXPECT_GT(row.compute_ceiling_tok_s, 0.0);
    EXPECT_GT(row.ceiling_tok_s, 0.0);
    EXPECT_LE(row.ceiling_tok_s, row.compute_ceiling_tok_s);
    EXPECT_GT(row.fraction, 0.0);
    // f32's kernel is bound by fp32 FMA: present wherever there is a vector ISA level.
    if (instruction_peak_for(r->instruction_peaks, DType::kF32) != nullptr) {
      EXPECT_GT(row.hardware_ceiling_tok_s, 0.0);
    }
    if (!row.memory_bound()) {  // a memory-bound row pairs each step with its own bandwidth
      EXPECT_DOUBLE_EQ(row.fraction, row.tok_s.median / row.ceiling_tok_s);
    }
    if (row.kind == BenchKind::kDecode) {
      EXPECT_GT(row.bandwidth_gbs, 0.0);
      const double memory = static_cast<double>(row.n) * row.bandwidth_gbs * 1e9 /
                            decode_bytes_per_step(r->cost, row.n, o.kv_len);
      EXPECT_NEAR(row.memory_ceiling_tok_s, memory, 1e-9 * memory);
    }
  }
  ASSERT_EQ(r->peaks.size(), 1u);
  EXPECT_EQ(r->peaks[0].n_in, model_->config().n_embd);
  EXPECT_EQ(r->n_threads, 2);

  const ModelBenchLabel label{"stories260K.gguf", "llama", model_->config().n_layers,
                              model_->config().n_embd};
  const std::string table = model_bench_table(*r, label);
  for (const char* want :
       {"prefill 8", "prefill 20", "decode 1", "decode 3", "kernel peak f32", "memory bandwidth"})
    EXPECT_NE(table.find(want), std::string::npos) << want << " missing from\n" << table;
  const nlohmann::json j = model_bench_json(*r, label);
  ASSERT_EQ(j["tests"].size(), 4u);
  EXPECT_EQ(j["tests"][3]["batch"], 3);
  EXPECT_EQ(j["tests"][1]["prompt_tokens"], 20);
  EXPECT_DOUBLE_EQ(j["tests"][2]["vs_batch1"].get<double>(), 1.0);
  EXPECT_GT(j["tests"][0]["fraction_of_ceiling"].get<double>(), 0.0);
  EXPECT_EQ(j["settings"]["threads"], 2);
}

TEST_F(ModelBenchTest, BadOptionsAreRefusedWithTheirValue) {
  const ModelConfig& c = model_->config();
  struct Case {
    void (*change)(ModelBenchOptions&);
    const char* says;
  };
  const Case cases[] = {
      {[](ModelBenchOptions& o) { o.prompt_lengths = {0}; }, "prompt length 0"},
      {[](ModelBenchOptions& o) { o.prompt_lengths = {1 << 20}; }, "exceeds the model's context"},
      {[](ModelBenchOptions& o) {
         o.batch_sizes = {4, -1};
       },
       "batch size -1"},
      {[](ModelBenchOptions& o) { o.kv_type = DType::kQ4_K; }, "KV type q4_K"},
      {[](ModelBenchOptions& o) { o.repetitions = 0; }, "0 repetitions"},
      {[](ModelBenchOptions& o) { o.kv_len = 1 << 20; }, "kv length"},
  };
  for (const Case& k : cases) {
    ModelBenchOptions o = quick_options();
    k.change(o);
    const Status st = validate_model_bench_options(o, c);
    EXPECT_FALSE(st.ok()) << k.says;
    EXPECT_NE(st.message().find(k.says), std::string::npos) << st.message();
  }
  EXPECT_TRUE(validate_model_bench_options(quick_options(), c).ok());
}

}  // namespace
}  // namespace tally::perf
