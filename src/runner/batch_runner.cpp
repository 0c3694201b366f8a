#include "runner/batch_runner.h"

#include <algorithm>
#include <iterator>

#include "base/check.h"

namespace tally {

namespace {

int64_t max_rows_of(const BatchRunnerConfig& c) { return std::min(c.max_rows, c.max_tokens); }

// A row with a draft of k tokens reads k + 1 logits rows; all of them are tokens of the step.
int64_t max_logit_rows_of(const BatchRunnerConfig& c) {
  return std::min(max_rows_of(c) * (1 + c.max_draft), c.max_tokens);
}

}  // namespace

plan::ActivationShape BatchRunner::model_activation_shape(const ModelConfig& model) {
  plan::ActivationShape s;
  s.n_embd = model.n_embd;
  s.n_heads = model.n_heads;
  s.n_kv_heads = model.n_kv_heads;
  s.head_dim = model.head_dim;
  s.rope_dim = model.rope_dim;
  s.n_ff = model.ffn_hidden_width();
  s.n_vocab = model.n_vocab;
  s.n_expert = model.n_expert;
  s.n_expert_used = model.n_expert_used;
  return s;
}

plan::ActivationShape BatchRunner::activation_shape(const ModelConfig& model,
                                                   const BatchRunnerConfig& c) {
  plan::ActivationShape s = model_activation_shape(model);
  s.n_tokens = c.max_tokens;
  s.n_rows = max_rows_of(c);
  s.n_logit_rows = max_logit_rows_of(c);
  s.n_seqs = c.max_seqs;
  s.context = c.max_seq_len;
  s.blocks_per_seq = (c.max_seq_len + c.block_size - 1) / c.block_size;
  return s;
}

BatchRunnerBytes BatchRunner::bytes_for(const ModelConfig& model, const BatchRunnerConfig& c) {
  BatchRunnerBytes b;
  const KvStorageShape shape = KvStorageShape::for_model(model, c.n_blocks, c.block_size, c.kv_type);
  b.kv = shape.bytes();
  const std::vector<plan::ActivationTerm> terms = plan::activation_terms(activation_shape(model, c));
  b.buffers = plan::activation_bytes(terms);
  b.buffers_at_start = plan::activation_bytes_at_start(terms);
  return b;
}

int64_t BatchRunner::bytes_allocated_at_start() const {
  const auto bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() * sizeof(v[0]));
  };
  return scratch_.bytes() + bytes(tokens_) + bytes(positions_) + bytes(seq_index_) + bytes(rows_) +
         bytes(logit_rows_) + bytes(row_logits_) + bytes(row_last_) + bytes(slot_logits_) +
         bytes(logits_);
}

Result<std::unique_ptr<BatchRunner>> BatchRunner::create(const Model& model,
                                                         const BatchRunnerConfig& config) {
  if (config.max_tokens < 1 || config.max_rows < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "runner: max_tokens {} and max_rows {} must be >= 1", config.max_tokens,
                      config.max_rows);
  }
  const KvStorageShape shape =
      KvStorageShape::for_model(model.config(), config.n_blocks, config.block_size, config.kv_type);
  TALLY_ASSIGN_OR_RETURN(KvStorage kv, KvStorage::create(shape));
  return std::unique_ptr<BatchRunner>(new BatchRunner(model, config, std::move(kv)));
}

BatchRunner::BatchRunner(const Model& model, const BatchRunnerConfig& config, KvStorage kv)
    : model_(model),
      config_(config),
      n_vocab_(model.config().n_vocab),
      bytes_(bytes_for(model.config(), config)),
      kv_(std::move(kv)),
      scratch_(model.config(), config.max_tokens) {
  const auto rows = static_cast<size_t>(max_rows_of(config));
  const auto logit_rows = static_cast<size_t>(max_logit_rows_of(config));
  const auto tokens = static_cast<size_t>(config.max_tokens);
  tokens_.resize(tokens);
  positions_.resize(tokens);
  seq_index_.resize(tokens);
  rows_.resize(rows);
  logit_rows_.resize(logit_rows);
  row_logits_.resize(rows);
  row_last_.resize(rows);
  slot_logits_.reserve(rows);
  logits_.resize(logit_rows * static_cast<size_t>(n_vocab_));
  // The ledger's buffers are plan/activations.h's terms: what was allocated must be them.
  TALLY_CHECK(bytes_allocated_at_start() == bytes_.buffers_at_start,
              "runner: allocated {} B of buffers, plan/activations.h says {} B",
              bytes_allocated_at_start(), bytes_.buffers_at_start);
}

Status BatchRunner::fill_batch(const SchedulerOutput& out) {
  const auto n_rows = out.scheduled.size();
  if (n_rows > rows_.size() || out.n_tokens > config_.max_tokens ||
      out.samples.size() > rows_.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "runner: step {} has {} rows, {} tokens and {} samples; the runner holds "
                      "{} rows and {} tokens",
                      out.step, n_rows, out.n_tokens, out.samples.size(), rows_.size(),
                      config_.max_tokens);
  }
  int32_t t = 0;
  for (size_t r = 0; r < n_rows; ++r) {
    const ScheduledSeq& row = out.scheduled[r];
    // Positions up to known_end are the row's known tokens; the rest is its draft.
    const int32_t known_end = row.start + row.n_known();
    if (row.start < 0 || row.n_draft < 0 || row.n_known() < 0 ||
        row.tokens_begin < 0 || row.tokens_begin + row.n_known() > std::ssize(out.token_ids) ||
        row.table_begin < 0 || row.table_count < 0 ||
        row.table_begin + row.table_count > std::ssize(out.block_ids) ||
        row.draft_begin < 0 || row.draft_begin + row.n_draft > out.n_draft_tokens() ||
        t + row.n_tokens > config_.max_tokens) {
      return make_error(ErrorCode::kInvalidArgument,
                        "runner: row {} computes positions [{}, {}) ({} drafted) of sequence {} "
                        "outside the step's {} tokens, {} block ids, {} draft tokens or {} slots",
                        r, row.start, row.start + row.n_tokens, row.n_draft, row.seq_id,
                        out.token_ids.size(), out.block_ids.size(), out.draft_tokens.size(),
                        config_.max_tokens);
    }
    rows_[r].block_table = out.block_table(row);
    const std::span<const int32_t> known = out.tokens(row);
    const std::span<const int32_t> draft = out.draft(row);
    for (int32_t p = row.start; p < row.start + row.n_tokens; ++p, ++t) {
      tokens_[t] = p < known_end ? known[p - row.start] : draft[p - known_end];
      positions_[t] = p;
      seq_index_[t] = static_cast<int32_t>(r);
    }
    row_last_[r] = t - 1;
    row_logits_[r] = -1;
  }
  // Logits only for rows that are sampled, once per row however many slots read it, in the
  // order the slots first name them; a row with a draft gets one per draft position and one
  // for its last known token, in position order.
  int32_t n_logits = 0;
  slot_logits_.clear();
  for (const SampleSlot& slot : out.samples) {
    TALLY_CHECK(slot.row >= 0 && static_cast<size_t>(slot.row) < n_rows, "sample slot row {}",
                slot.row);
    int32_t& at = row_logits_[slot.row];
    if (at < 0) {
      const int32_t n_draft = out.scheduled[slot.row].n_draft;
      if (n_logits + n_draft + 1 > static_cast<int32_t>(logit_rows_.size())) {
        return make_error(ErrorCode::kInvalidArgument,
                          "runner: step {} needs more than the {} logits rows it holds", out.step,
                          logit_rows_.size());
      }
      at = n_logits;
      for (int32_t i = 0; i <= n_draft; ++i) {
        logit_rows_[n_logits++] = row_last_[slot.row] - n_draft + i;
      }
    }
    slot_logits_.push_back(at);
  }
  batch_.tokens = std::span<const int32_t>(tokens_.data(), t);
  batch_.positions = std::span<const int32_t>(positions_.data(), t);
  batch_.seq_index = std::span<const int32_t>(seq_index_.data(), t);
  batch_.seqs = std::span<const BatchSequence>(rows_.data(), n_rows);
  batch_.logit_rows = std::span<const int32_t>(logit_rows_.data(), n_logits);
  return Status::ok_status();
}

Status BatchRunner::prepare(const SchedulerOutput& out) {
  TALLY_RETURN_IF_ERROR(apply(out));
  return fill_batch(out);
}

Status BatchRunner::apply(const SchedulerOutput& out) {
  for (const BlockCopy& c : out.block_copies) {
    if (c.src < 0 || c.dst < 0 || c.src >= kv_.shape().n_blocks || c.dst >= kv_.shape().n_blocks) {
      return make_error(ErrorCode::kInvalidArgument, "runner: block copy {} -> {} of {} blocks",
                        c.src, c.dst, kv_.shape().n_blocks);
    }
    kv_.copy_block(c.src, c.dst);
  }
  return Status::ok_status();
}

Status BatchRunner::forward(ThreadPool& pool) {
  if (batch_.tokens.empty()) return Status::ok_status();
  return model_.forward(batch_, kv_, scratch_, pool, logits_.data());
}

std::span<float> BatchRunner::slot_logits(size_t k, int32_t i) {
  TALLY_CHECK(k < slot_logits_.size(), "sample slot {} of {}", k, slot_logits_.size());
  const int32_t at = slot_logits_[k] + i;
  TALLY_CHECK(i >= 0 && at < static_cast<int32_t>(batch_.logit_rows.size()),
              "sample slot {} draft position {}", k, i);
  const auto n = static_cast<size_t>(n_vocab_);
  return std::span<float>(logits_.data() + static_cast<size_t>(at) * n, n);
}

}  // namespace tally
