// Batch validation (every bad field is an InvalidArgument, never UB) and scratch sizes. KV cache
// shapes: kv_cache_test.cpp.
#include <gtest/gtest.h>

#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

using tally::ErrorCode;

class BatchValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = make_tiny_gguf(TinySpec{});
    auto m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes_)).value());
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    runner_ = std::make_unique<ModelRunner>(*model_, 4, 1, 2, 16, 3, /*max_tokens=*/8);
  }
  // Runs a batch, expecting InvalidArgument mentioning `needle`.
  void expect_invalid(const tally::Batch& b, const std::string& needle) {
    std::vector<float> logits;
    const auto st = runner_->try_step(b, logits);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
  }

  std::vector<uint8_t> bytes_;
  std::unique_ptr<tally::Model> model_;
  std::unique_ptr<ModelRunner> runner_;
};

TEST_F(BatchValidation, GoodBatchRuns) {
  std::vector<float> logits;
  EXPECT_TRUE(runner_->try_step(runner_->make_batch({{0, 0, {1, 2, 3}}, {1, 0, {4}}}), logits).ok());
  // An empty batch is fine too.
  EXPECT_TRUE(runner_->try_step(runner_->make_batch({}), logits).ok());
}

TEST_F(BatchValidation, EachBadFieldIsNamed) {
  expect_invalid(runner_->make_batch({{0, 0, {1, 40}}}), "tokens[1] = 40");
  expect_invalid(runner_->make_batch({{0, 0, {-1}}}), "tokens[0] = -1");
  expect_invalid(runner_->make_batch({{0, 256, {1}}}), "positions[0] = 256");
  expect_invalid(runner_->make_batch({{0, -3, {1}}}), "positions[0] = -3");
  expect_invalid(runner_->make_batch({{2, 0, {1}}}), "seq_index[0] = 2");
  // Position 16 needs a fifth block of 4; the tables hold 4.
  expect_invalid(runner_->make_batch({{0, 16, {1}}}), "needs 5 blocks");
  expect_invalid(runner_->make_batch({{0, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}), "9 tokens exceed");

  tally::Batch b = runner_->make_batch({{0, 0, {1, 2}}});
  const std::vector<int32_t> rows = {0, 2};
  b.logit_rows = rows;
  expect_invalid(b, "logit_rows[1] = 2");

  b = runner_->make_batch({{0, 0, {1, 2}}});
  const std::vector<int32_t> short_positions = {0};
  b.positions = short_positions;
  expect_invalid(b, "2 tokens but 1 positions");

  b = runner_->make_batch({{0, 0, {1}}});
  const std::vector<int32_t> bad_table = {0, 999};
  const std::vector<tally::BatchSequence> seqs = {{bad_table}};
  b.seqs = seqs;
  expect_invalid(b, "block_table[1] = 999");

  // Dropped (-1) entries: only leading ones, and never one a token reads (no window here:
  // every token reads from block 0).
  const std::vector<int32_t> hole = {0, -1, 1, 2};
  const std::vector<tally::BatchSequence> hole_seqs = {{hole}};
  b = runner_->make_batch({{0, 0, {1}}});
  b.seqs = hole_seqs;
  expect_invalid(b, "block_table[1] = -1");
  const std::vector<int32_t> dropped = {-1, 0, 1, 2};
  const std::vector<tally::BatchSequence> dropped_seqs = {{dropped}};
  b = runner_->make_batch({{0, 9, {1}}});
  b.seqs = dropped_seqs;
  expect_invalid(b, "reads seqs[0].block_table[0], which is dropped");
}

// With a window on every layer, entries wholly behind every token's window may be dropped.
TEST(BatchWindow, DroppedEntriesBehindTheWindowAreAccepted) {
  TinySpec s;
  s.extra = [](tally::io::GgufWriter& w) { w.set_u32("llama.attention.sliding_window", 5); };
  const auto bytes = make_tiny_gguf(s);
  auto m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes)).value());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ModelRunner runner(**m, 4, 1, 2, 16, 3, /*max_tokens=*/8);
  std::vector<float> logits;
  // Position 9 reads 5..9: blocks 1 and 2 of 4 tokens; block 0 may be dropped.
  const std::vector<int32_t> dropped = {-1, 0, 1, 2};
  const std::vector<tally::BatchSequence> seqs = {{dropped}};
  tally::Batch b = runner.make_batch({{0, 9, {1}}});
  b.seqs = seqs;
  EXPECT_TRUE(runner.try_step(b, logits).ok());
  b = runner.make_batch({{0, 7, {1}}});  // position 7 reads 3..7: block 0 too
  b.seqs = seqs;
  const auto st = runner.try_step(b, logits);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("which is dropped"), std::string::npos) << st.to_string();
}

TEST_F(BatchValidation, MismatchedCacheOrScratchIsRejected) {
  auto kv = tally::KvStorage::create({3, 2, 8, 4, 4});
  ASSERT_TRUE(kv.ok());
  tally::ThreadPool pool(1);
  const tally::Batch b = runner_->make_batch({{0, 0, {1}}});
  std::vector<float> logits(40);
  auto st = model_->forward(b, *kv, runner_->scratch(), pool, logits.data());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("KV cache"), std::string::npos) << st.to_string();

  tally::ModelConfig other = model_->config();
  other.n_ff = 64;
  tally::ForwardScratch scratch(other, 8);
  st = model_->forward(b, runner_->kv(), scratch, pool, logits.data());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("scratch"), std::string::npos) << st.to_string();
}

TEST(ForwardScratch, BytesMatchPlan) {
  const auto bytes = make_tiny_gguf(TinySpec{});
  auto m = tally::Model::from_gguf(std::move(tally::io::GgufFile::parse(bytes)).value());
  ASSERT_TRUE(m.ok());
  const auto& c = (*m)->config();
  tally::ForwardScratch s(c, 10);
  EXPECT_EQ(s.bytes(), tally::ForwardScratch::bytes_for(c, 10));
  // 2 x embd + 2 x q + 2 x kv + 2 x ff + 2 x rope floats per token, plus a slot and a table.
  const int64_t floats = 2 * 32 + 2 * 32 + 2 * 16 + 2 * 48 + 2 * 8;
  EXPECT_EQ(s.bytes(), 10 * (floats * 4 + 8 + 16));
}

}  // namespace
}  // namespace tally_test
