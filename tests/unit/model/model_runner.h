// Drives Model::forward for the tests: a KV pool, scratch, thread pool, and steps described
// as chunks of consecutive tokens of numbered sequences.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/model.h"

namespace tally_test {

struct Chunk {
  int32_t seq = 0;        // index into the runner's block tables
  int32_t start_pos = 0;  // position of tokens[0]
  std::vector<int32_t> tokens;
};

class ModelRunner {
 public:
  // n_seqs sequences of up to max_positions each, block tables disjoint, shuffled by seed
  // (seed 0: contiguous in order), K/V stored as kv_type.
  ModelRunner(const tally::Model& model, int64_t block_size, int threads, int n_seqs, int64_t max_positions,
              uint32_t seed, int64_t max_tokens = 256, tally::KvTypes kv_type = tally::DType::kF32);

  // One forward over the chunks; logits of every token, in chunk order: [n_tokens][n_vocab].
  std::vector<float> step(const std::vector<Chunk>& chunks);
  // Same, returning the status (for invalid batches).
  tally::Status try_step(const tally::Batch& batch, std::vector<float>& logits);

  tally::Batch make_batch(const std::vector<Chunk>& chunks);
  tally::KvStorage& kv() { return kv_; }
  tally::ForwardScratch& scratch() { return scratch_; }
  const std::vector<std::vector<int32_t>>& tables() const { return tables_; }

 private:
  const tally::Model& model_;
  tally::KvStorage kv_;
  tally::ForwardScratch scratch_;
  tally::ThreadPool pool_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<tally::BatchSequence> seqs_;
  // Storage of the last batch.
  std::vector<int32_t> tokens_, positions_, seq_index_, logit_rows_;
};

// Index of the largest value (the first one on ties), as run.c's argmax.
int argmax(const float* v, int64_t n);

}  // namespace tally_test
