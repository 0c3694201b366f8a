#include "engine/draft_model_runner.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "base/check.h"
#include "plan/activations.h"

namespace tally {

namespace {

// One batch row per scheduled row; at most one logits row each per pass.
int64_t draft_max_rows(const DraftRunnerConfig& c) { return std::min(c.max_rows, c.max_tokens); }

// A token's text for an error message: quoted, and short.
std::string quoted_piece(const Tokenizer& tok, int32_t id) {
  std::string_view p = tok.piece(id);
  if (p.size() > 40) p = p.substr(0, 40);
  return fmt::format("'{}'", p);
}

}  // namespace

Status DraftModelRunner::check_vocabulary(const Tokenizer& target, const Tokenizer& draft,
                                          int64_t target_logits, int64_t draft_logits,
                                          const std::string& draft_path) {
  if (target.n_vocab() != draft.n_vocab() || target_logits != draft_logits) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--draft-model {}: its vocabulary is not the target's: {} tokens and {} "
                      "logits rows, the target has {} tokens and {} logits rows",
                      draft_path, draft.n_vocab(), draft_logits, target.n_vocab(), target_logits);
  }
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    if (target.piece(id) != draft.piece(id)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--draft-model {}: its vocabulary is not the target's: token {} is {} "
                        "in the draft model and {} in the target",
                        draft_path, id, quoted_piece(draft, id), quoted_piece(target, id));
    }
  }
  return Status::ok_status();
}

int64_t DraftModelRunner::buffer_bytes_for(const ModelConfig& draft, const DraftRunnerConfig& c) {
  // plan/activations.h is the one home of these sizes (`tally plan --draft-model` prints them).
  plan::ActivationShape s = BatchRunner::model_activation_shape(draft);
  s.n_tokens = c.max_tokens;
  s.n_rows = draft_max_rows(c);
  return plan::activation_bytes(plan::draft_activation_terms(s, c.max_draft));
}

Result<std::unique_ptr<DraftModelRunner>> DraftModelRunner::create(
    const std::string& path, const Tokenizer& target_tokenizer, const ModelConfig& target,
    const DraftRunnerConfig& config) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(path));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::from_gguf(model->gguf()));
  TALLY_RETURN_IF_ERROR(check_vocabulary(target_tokenizer, *tokenizer, target.n_vocab,
                                         model->config().n_vocab, path));
  if (model->config().context_length < config.max_model_len) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--draft-model {}: it was trained for {} positions, the target runs {} "
                      "(lower --max-model-len)",
                      path, model->config().context_length, config.max_model_len);
  }
  model->use_context_length(config.max_model_len);  // LongRoPE's factor set
  const KvStorageShape shape = KvStorageShape::for_model(model->config(), config.n_blocks,
                                                         config.block_size, config.kv_type);
  TALLY_ASSIGN_OR_RETURN(KvStorage kv, KvStorage::create(shape));
  return std::unique_ptr<DraftModelRunner>(
      new DraftModelRunner(std::move(model), config, std::move(kv)));
}

DraftModelRunner::DraftModelRunner(std::unique_ptr<Model> model, const DraftRunnerConfig& config,
                                   KvStorage kv)
    : model_(std::move(model)),
      config_(config),
      kv_(std::move(kv)),
      scratch_(model_->config(), config.max_tokens) {
  const auto tokens = static_cast<size_t>(config.max_tokens);
  const auto rows = static_cast<size_t>(draft_max_rows(config));
  tokens_.resize(tokens);
  positions_.resize(tokens);
  seq_index_.resize(tokens);
  rows_.resize(rows);
  logit_rows_.resize(rows);
  logit_owner_.resize(rows);
  logits_.resize(rows * static_cast<size_t>(model_->config().n_vocab));
  q_.resize(logits_.size() * static_cast<size_t>(config.max_draft));
  pass_times_.reserve(static_cast<size_t>(config.max_draft));
  bytes_.weights = model_->weights().mapped_bytes + model_->weights().owned_bytes;
  bytes_.kv = kv_.shape().bytes();
  bytes_.buffers = buffer_bytes_for(model_->config(), config);
  const auto bytes = [](const auto& v) { return static_cast<int64_t>(v.capacity() * sizeof(v[0])); };
  const int64_t allocated = scratch_.bytes() + bytes(tokens_) + bytes(positions_) +
                            bytes(seq_index_) + bytes(rows_) + bytes(logit_rows_) +
                            bytes(logit_owner_) + bytes(logits_) + bytes(q_);
  TALLY_CHECK(allocated == bytes_.buffers, "draft model buffers: {} B allocated, the plan says {} B",
              allocated, bytes_.buffers);
}

void DraftModelRunner::add_row(std::span<const int32_t> block_table, int32_t first,
                               std::span<const int32_t> tokens, std::span<const int32_t> more,
                               bool want_logits, size_t owner) {
  rows_[n_rows_].block_table = block_table;
  int32_t pos = first;
  for (const std::span<const int32_t> part : {tokens, more}) {
    for (size_t i = 0; i < part.size(); ++i, ++n_tokens_) {
      tokens_[n_tokens_] = part[i];
      positions_[n_tokens_] = pos++;
      seq_index_[n_tokens_] = static_cast<int32_t>(n_rows_);
    }
  }
  if (want_logits) {
    logit_owner_[n_logits_] = owner;
    logit_rows_[n_logits_++] = static_cast<int32_t>(n_tokens_) - 1;
  }
  ++n_rows_;
}

Status DraftModelRunner::run_pass(ThreadPool& pool) {
  Batch b;
  b.tokens = std::span<const int32_t>(tokens_.data(), n_tokens_);
  b.positions = std::span<const int32_t>(positions_.data(), n_tokens_);
  b.seq_index = std::span<const int32_t>(seq_index_.data(), n_tokens_);
  b.seqs = std::span<const BatchSequence>(rows_.data(), n_rows_);
  b.logit_rows = std::span<const int32_t>(logit_rows_.data(), n_logits_);
  ++passes_;
  return model_->forward(b, kv_, scratch_, pool, logits_.data());
}

std::span<const float> DraftModelRunner::draft_q(size_t row, int32_t i) const {
  const auto n_vocab = static_cast<size_t>(model_->config().n_vocab);
  TALLY_CHECK(i >= 0 && i < config_.max_draft && row < rows_.size(), "draft q of row {} at {}",
              row, i);
  const size_t at = (row * static_cast<size_t>(config_.max_draft) + static_cast<size_t>(i)) * n_vocab;
  return std::span<const float>(q_.data() + at, n_vocab);
}

Status DraftModelRunner::propose(SchedulerOutput& out, ThreadPool& pool, DraftTokenPicker pick) {
  if (out.scheduled.size() > rows_.size() || out.n_tokens > config_.max_tokens) {
    return make_error(ErrorCode::kInvalidArgument,
                      "draft model: step {} has {} rows and {} tokens; it holds {} and {}",
                      out.step, out.scheduled.size(), out.n_tokens, rows_.size(),
                      config_.max_tokens);
  }
  for (const BlockCopy& c : out.block_copies) kv_.copy_block(c.src, c.dst);
  const auto n_vocab = static_cast<size_t>(model_->config().n_vocab);
  int32_t most_drafts = 0;
  pass_times_.clear();
  for (int32_t pass = 0;; ++pass) {
    n_tokens_ = n_rows_ = n_logits_ = 0;
    for (size_t r = 0; r < out.scheduled.size(); ++r) {
      const ScheduledSeq& row = out.scheduled[r];
      const int32_t known_end = row.start + row.n_tokens - row.n_draft;
      if (pass == 0) {
        if (row.start < 0 || row.n_known() < 0) {
          return make_error(ErrorCode::kInvalidArgument,
                            "draft model: row {} computes [{}, {})", r, row.start, known_end);
        }
        // An n-gram (or replayed) draft is known now: its positions are part of this pass,
        // so the draft's KV holds whatever the target accepts.
        add_row(out.block_table(row), row.start, out.tokens(row),
                row.draft_by_model ? std::span<const int32_t>{} : out.draft(row),
                row.draft_by_model, r);
        if (row.draft_by_model) most_drafts = std::max(most_drafts, row.n_draft);
      } else if (row.draft_by_model && row.n_draft >= pass) {
        const int32_t* token = &out.draft_tokens[static_cast<size_t>(row.draft_begin + pass - 1)];
        add_row(out.block_table(row), known_end + pass - 1,
                std::span<const int32_t>(token, 1), {}, pass < row.n_draft, r);
      }
    }
    if (n_tokens_ == 0) return Status::ok_status();
    const auto pass_start = std::chrono::steady_clock::now();
    TALLY_RETURN_IF_ERROR(run_pass(pool));
    if (pass > 0) {
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - pass_start;
      pass_times_.push_back({static_cast<int32_t>(n_rows_), took.count()});
    }
    for (size_t i = 0; i < n_logits_; ++i) {
      const ScheduledSeq& row = out.scheduled[logit_owner_[i]];
      const std::span<const float> logits(logits_.data() + i * n_vocab, n_vocab);
      const size_t q_at = (logit_owner_[i] * static_cast<size_t>(config_.max_draft) +
                           static_cast<size_t>(pass)) * n_vocab;
      out.draft_tokens[static_cast<size_t>(row.draft_begin + pass)] =
          pick(logit_owner_[i], pass, logits, std::span<float>(q_.data() + q_at, n_vocab));
    }
    if (pass >= most_drafts) return Status::ok_status();
  }
}

}  // namespace tally
