#include "model_runner.h"

#include <algorithm>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

namespace tally_test {

namespace {

tally::KvStorage make_kv(const tally::Model& model, int64_t n_blocks, int64_t block_size, tally::KvTypes kv_type) {
  auto kv = tally::KvStorage::create(tally::KvStorageShape::for_model(model.config(), n_blocks, block_size, kv_type));
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  return std::move(kv).value();
}

}  // namespace

ModelRunner::ModelRunner(const tally::Model& model, int64_t block_size, int threads, int n_seqs,
                         int64_t max_positions, uint32_t seed, int64_t max_tokens, tally::KvTypes kv_type)
    : model_(model),
      kv_(make_kv(model, n_seqs * ((max_positions + block_size - 1) / block_size) + 2, block_size, kv_type)),
      scratch_(model.config(), max_tokens),
      pool_(threads) {
  const int64_t per_seq = (max_positions + block_size - 1) / block_size;
  std::vector<int32_t> ids(kv_.shape().n_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  if (seed != 0) {
    std::mt19937 rng(seed);
    std::shuffle(ids.begin(), ids.end(), rng);
  }
  for (int s = 0; s < n_seqs; ++s) tables_.emplace_back(ids.begin() + s * per_seq, ids.begin() + (s + 1) * per_seq);
  for (const auto& t : tables_) seqs_.push_back({t});
}

tally::Batch ModelRunner::make_batch(const std::vector<Chunk>& chunks) {
  tokens_.clear();
  positions_.clear();
  seq_index_.clear();
  logit_rows_.clear();
  for (const Chunk& c : chunks)
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      logit_rows_.push_back(static_cast<int32_t>(tokens_.size()));
      tokens_.push_back(c.tokens[i]);
      positions_.push_back(c.start_pos + static_cast<int32_t>(i));
      seq_index_.push_back(c.seq);
    }
  return {tokens_, positions_, seq_index_, seqs_, logit_rows_};
}

tally::Status ModelRunner::try_step(const tally::Batch& batch, std::vector<float>& logits) {
  logits.assign(batch.logit_rows.size() * model_.config().n_vocab, 0.0f);
  return model_.forward(batch, kv_, scratch_, pool_, logits.data());
}

std::vector<float> ModelRunner::step(const std::vector<Chunk>& chunks) {
  std::vector<float> logits;
  const auto st = try_step(make_batch(chunks), logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

int argmax(const float* v, int64_t n) {
  int best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (v[i] > v[best]) best = static_cast<int>(i);
  return best;
}

}  // namespace tally_test
