#include "runner/generator.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "model/batch.h"

namespace tally {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

const char* finish_reason_name(GenerateFinish r) {
  switch (r) {
    case GenerateFinish::kLength: return "length";
    case GenerateFinish::kStopToken: return "stop";
    case GenerateFinish::kCallback: return "stop";
    case GenerateFinish::kContextFull: return "context";
  }
  return "?";
}

Generator::Generator(const Model& model, ThreadPool& pool, int32_t max_context, int32_t max_batch,
                     int32_t block_size, DType kv_type)
    : model_(model),
      pool_(pool),
      max_context_(max_context),
      max_batch_(std::max<int32_t>(1, std::min(max_batch, max_context))),
      block_size_(block_size) {
  TALLY_CHECK(max_context > 0 && block_size > 0, "bad generator sizes {} {}", max_context, block_size);
  const int32_t n_blocks = (max_context + block_size - 1) / block_size;
  auto kv = KvStorage::create(KvStorageShape::for_model(model.config(), n_blocks, block_size, kv_type));
  TALLY_CHECK(kv.ok(), "KV cache: {}", kv.status().message());
  kv_ = std::make_unique<KvStorage>(std::move(kv).value());
  scratch_ = std::make_unique<ForwardScratch>(model.config(), max_batch_);
  block_table_.resize(n_blocks);
  for (int32_t i = 0; i < n_blocks; ++i) block_table_[i] = i;
  logits_.resize(model.config().n_vocab);
}

Generator::~Generator() = default;

Result<GenerateStats> Generator::generate(const GenerateRequest& request,
                                          FunctionRef<bool(int32_t)> on_token) {
  const auto& prompt = request.prompt;
  if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "prompt has no tokens");
  if (static_cast<int64_t>(prompt.size()) > max_context_) {
    return make_error(ErrorCode::kOutOfRange,
                      "prompt has {} tokens, more than the context of {} tokens", prompt.size(),
                      max_context_);
  }
  TALLY_RETURN_IF_ERROR(request.sampling.validate(static_cast<int32_t>(model_.config().n_vocab)));

  GenerateStats stats;
  stats.n_prompt = static_cast<int32_t>(prompt.size());
  Sampler sampler(request.sampling, static_cast<int32_t>(model_.config().n_vocab));
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  history.reserve(prompt.size() + request.max_new_tokens);
  std::vector<int32_t> positions(max_batch_), seq_index(max_batch_, 0);
  const BatchSequence seq{block_table_};

  // One forward over tokens [begin, end) of `history`; logits of the last one.
  auto run = [&](size_t begin, size_t end) -> Status {
    const int32_t n = static_cast<int32_t>(end - begin);
    for (int32_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(begin) + i;
    const int32_t last = n - 1;
    Batch batch;
    batch.tokens = std::span<const int32_t>(history.data() + begin, n);
    batch.positions = std::span<const int32_t>(positions.data(), n);
    batch.seq_index = std::span<const int32_t>(seq_index.data(), n);
    batch.seqs = std::span<const BatchSequence>(&seq, 1);
    batch.logit_rows = std::span<const int32_t>(&last, 1);
    return model_.forward(batch, *kv_, *scratch_, pool_, logits_.data());
  };

  const auto t0 = Clock::now();
  for (size_t begin = 0; begin < prompt.size(); begin += max_batch_)
    TALLY_RETURN_IF_ERROR(run(begin, std::min(prompt.size(), begin + max_batch_)));
  stats.prefill_seconds = seconds_since(t0);

  Clock::time_point t_first;
  for (int32_t i = 0; i < request.max_new_tokens; ++i) {
    const int32_t token = sampler.sample(logits_, history);
    if (i == 0) {
      stats.ttft_seconds = seconds_since(t0);
      t_first = Clock::now();
    }
    const bool is_stop = std::find(request.stop_tokens.begin(), request.stop_tokens.end(), token) !=
                         request.stop_tokens.end();
    if (is_stop && !request.ignore_eos) {
      stats.finish = GenerateFinish::kStopToken;
      break;
    }
    history.push_back(token);
    stats.n_generated += 1;
    if (!on_token(token)) {
      stats.finish = GenerateFinish::kCallback;
      break;
    }
    if (i + 1 == request.max_new_tokens) break;  // no forward for a token nobody samples
    if (static_cast<int64_t>(history.size()) >= max_context_) {
      stats.finish = GenerateFinish::kContextFull;
      break;
    }
    TALLY_RETURN_IF_ERROR(run(history.size() - 1, history.size()));
  }
  if (stats.n_generated > 0) stats.decode_seconds = seconds_since(t_first);
  return stats;
}

}  // namespace tally
