// The engine's runner: applies a SchedulerOutput to the KV storage, builds one ragged Batch
// from the scheduled rows, runs Model::forward over it and exposes the logits of every sample
// slot. Sampling itself stays with the caller (each request owns its samplers), and so does
// every token: the runner keeps no per-sequence state between steps. Each row of the output
// carries the tokens it computes and its whole block table (scheduler_output.h), so there is
// no second copy of the scheduler's tokens or tables to keep in step, and nothing to forget
// when a sequence ends.
//
// One step:
//   prepare(out)         copy-on-write blocks copied, batch arrays filled from the rows
//   forward(pool)        one Model::forward; logits only for the rows that are sampled
//   slot_logits(k, i)    [n_vocab] of sample slot k at draft position i (0 = the last known
//                        token's; i = 1..n_draft after each draft token); writable: the
//                        caller may mask tokens
//
// Memory: the KV pool, the forward scratch, the batch arrays and the logits are allocated once
// by create(); a step allocates nothing.
// Thread rules: not thread-safe; the engine thread alone calls it. The Model is borrowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/batch.h"
#include "model/forward_scratch.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "plan/activations.h"
#include "sched/scheduler_output.h"

namespace tally {

struct BatchRunnerConfig {
  int64_t n_blocks = 0;
  int64_t block_size = 16;
  KvTypes kv_type = DType::kF32;  // storage types of K and V
  int64_t max_tokens = 512;   // tokens per step (the scheduler's token budget)
  int64_t max_rows = 64;      // sequences per step
  int64_t max_seqs = 64;      // sequences resident at once (the scheduler's max_seqs)
  int64_t max_seq_len = 512;  // tokens per sequence (the scheduler's max_model_len)
  int64_t max_draft = 0;      // speculation: draft tokens per row (each needs a logits row)
};

// Bytes the runner allocates, without allocating (the ledger): the KV pool, and the buffers
// of plan/activations.h (batch arrays, forward scratch, logits, per-sequence state).
struct BatchRunnerBytes {
  int64_t kv = 0;
  int64_t buffers = 0;           // every term of plan::activation_terms
  int64_t buffers_at_start = 0;  // the terms create() allocates; the rest as sequences arrive
};

class BatchRunner {
 public:
  static BatchRunnerBytes bytes_for(const ModelConfig& model, const BatchRunnerConfig& config);
  static plan::ActivationShape activation_shape(const ModelConfig& model,
                                                const BatchRunnerConfig& config);
  // The model's part of an activation shape (widths, heads, vocabulary, experts); the step's
  // part (tokens, rows, sequences) is the caller's. The draft model's runner shares it.
  static plan::ActivationShape model_activation_shape(const ModelConfig& model);
  static Result<std::unique_ptr<BatchRunner>> create(const Model& model,
                                                     const BatchRunnerConfig& config);

  BatchRunner(const BatchRunner&) = delete;
  BatchRunner& operator=(const BatchRunner&) = delete;

  // Step 1 of scheduler_output.h, then the batch arrays. InvalidArgument when the output
  // does not fit (more rows or tokens than configured, a bad block copy or row).
  Status prepare(const SchedulerOutput& out);
  // prepare() in its two halves, for a draft model that runs on the same output in between:
  // the block copies, then the batch arrays.
  Status apply(const SchedulerOutput& out);
  Status fill(const SchedulerOutput& out) { return fill_batch(out); }
  // The forward pass over the prepared batch (nothing to do for an empty output).
  Status forward(ThreadPool& pool);

  // [n_vocab] logits of out.samples[k] of the prepared output, at draft position i.
  std::span<float> slot_logits(size_t k, int32_t i = 0);

  const KvStorage& kv() const { return kv_; }
  // The offload tiers copy blocks in and out through it between steps (engine_offload.h).
  KvStorage& kv_storage() { return kv_; }
  BatchRunnerBytes bytes() const { return bytes_; }
  int64_t n_vocab() const { return n_vocab_; }
  int64_t max_draft() const { return config_.max_draft; }

 private:
  BatchRunner(const Model& model, const BatchRunnerConfig& config, KvStorage kv);
  // What the constructor allocated, counted from the buffers themselves.
  int64_t bytes_allocated_at_start() const;
  Status fill_batch(const SchedulerOutput& out);

  const Model& model_;
  BatchRunnerConfig config_;
  int64_t n_vocab_;
  BatchRunnerBytes bytes_;
  KvStorage kv_;
  ForwardScratch scratch_;
  // Batch arrays, capacity fixed at creation.
  std::vector<int32_t> tokens_;       // [max_tokens]
  std::vector<int32_t> positions_;    // [max_tokens]
  std::vector<int32_t> seq_index_;    // [max_tokens]
  std::vector<BatchSequence> rows_;   // [max_rows]
  std::vector<int32_t> logit_rows_;   // [logit rows] token index per logits row
  std::vector<int32_t> row_logits_;   // [max_rows] logits row of each batch row, -1 if none
  std::vector<int32_t> row_last_;     // [max_rows] token index of each batch row's last
  std::vector<int32_t> slot_logits_;  // [samples] first logits row of each sample slot
  std::vector<float> logits_;         // [logit rows][n_vocab]
  Batch batch_;
};

}  // namespace tally
