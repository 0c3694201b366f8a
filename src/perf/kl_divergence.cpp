#include "perf/kl_divergence.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace tally::perf {

namespace {

constexpr char kKldMagic[8] = {'T', 'A', 'L', 'L', 'Y', 'K', 'L', 'D'};

// log softmax of logits into out, in f32 from double sums.
void kld_log_softmax(std::span<const float> logits, std::vector<float>& out) {
  out.resize(logits.size());
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_sum = std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i)
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - max - log_sum);
}

size_t kld_argmax(const std::vector<float>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

Status kld_io_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::kIo, "kl-divergence: {} {}: {}", what, path, std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<KldBaseWriter>> KldBaseWriter::create(const std::string& path, const KldHeader& h) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return kld_io_error("cannot create", path);
  const int64_t n_tokens = static_cast<int64_t>(h.tokens.size());
  bool ok = std::fwrite(kKldMagic, 1, sizeof kKldMagic, f) == sizeof kKldMagic &&
            std::fwrite(&h.n_vocab, sizeof h.n_vocab, 1, f) == 1 && std::fwrite(&h.n_ctx, sizeof h.n_ctx, 1, f) == 1 &&
            std::fwrite(&n_tokens, sizeof n_tokens, 1, f) == 1 &&
            std::fwrite(h.tokens.data(), sizeof(int32_t), h.tokens.size(), f) == h.tokens.size();
  std::unique_ptr<KldBaseWriter> w(new KldBaseWriter(f, path));
  if (!ok) {
    (void)w->finish();
    return kld_io_error("cannot write", path);
  }
  return w;
}

KldBaseWriter::~KldBaseWriter() {
  if (file_) std::fclose(file_);
}

Status KldBaseWriter::add_row(std::span<const float> logits) {
  kld_log_softmax(logits, log_probs_);
  if (std::fwrite(log_probs_.data(), sizeof(float), log_probs_.size(), file_) != log_probs_.size())
    return kld_io_error("cannot write", path_);
  return Status::ok_status();
}

Status KldBaseWriter::finish() {
  const bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
  std::fclose(file_);
  file_ = nullptr;
  if (!ok) {
    std::remove(path_.c_str());
    return kld_io_error("cannot write", path_);
  }
  return Status::ok_status();
}

Result<std::unique_ptr<KldComparer>> KldComparer::open(const std::string& path, const KldHeader& expect) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return kld_io_error("cannot read", path);
  std::unique_ptr<KldComparer> c(new KldComparer(f, std::max<int64_t>(expect.n_vocab, 1)));
  char magic[sizeof kKldMagic];
  KldHeader h;
  int64_t n_tokens = 0;
  if (std::fread(magic, 1, sizeof magic, f) != sizeof magic || std::memcmp(magic, kKldMagic, sizeof magic) != 0 ||
      std::fread(&h.n_vocab, sizeof h.n_vocab, 1, f) != 1 || std::fread(&h.n_ctx, sizeof h.n_ctx, 1, f) != 1 ||
      std::fread(&n_tokens, sizeof n_tokens, 1, f) != 1 || n_tokens < 0 || n_tokens > (int64_t{1} << 32)) {
    return make_error(ErrorCode::kFormat, "kl-divergence: {} is not a --kl-divergence-base file", path);
  }
  if (h.n_vocab != expect.n_vocab || h.n_ctx != expect.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "kl-divergence: {} was made with a vocabulary of {} and --ctx {}, this run has {} and {}", path,
                      h.n_vocab, h.n_ctx, expect.n_vocab, expect.n_ctx);
  }
  h.tokens.resize(static_cast<size_t>(n_tokens));
  if (std::fread(h.tokens.data(), sizeof(int32_t), h.tokens.size(), f) != h.tokens.size() || h.tokens != expect.tokens)
    return make_error(ErrorCode::kInvalidArgument, "kl-divergence: {} was made from another text", path);
  return c;
}

KldComparer::~KldComparer() {
  if (file_) std::fclose(file_);
}

Status KldComparer::add_row(std::span<const float> logits, int32_t target) {
  if (std::fread(base_.data(), sizeof(float), base_.size(), file_) != base_.size())
    return make_error(ErrorCode::kFormat, "kl-divergence: the base file ends after {} rows", n_rows_);
  kld_log_softmax(logits, log_probs_);
  double kld = 0.0;
  for (size_t i = 0; i < base_.size(); ++i)
    kld += std::exp(static_cast<double>(base_[i])) * (static_cast<double>(base_[i]) - log_probs_[i]);
  kld_ += kld;
  kld2_ += kld * kld;
  same_top_ += kld_argmax(base_) == kld_argmax(log_probs_) ? 1.0 : 0.0;
  base_nll_ -= base_[static_cast<size_t>(target)];
  const double dp = std::exp(static_cast<double>(log_probs_[static_cast<size_t>(target)])) -
                    std::exp(static_cast<double>(base_[static_cast<size_t>(target)]));
  dp2_ += dp * dp;
  ++n_rows_;
  return Status::ok_status();
}

Result<KldSummary> KldComparer::summary() const {
  char extra = 0;
  if (std::fread(&extra, 1, 1, file_) == 1)
    return make_error(ErrorCode::kInvalidArgument, "kl-divergence: the base file has more rows than {}", n_rows_);
  KldSummary s;
  s.n_rows = n_rows_;
  if (n_rows_ == 0) return s;
  const auto n = static_cast<double>(n_rows_);
  s.mean_kld = kld_ / n;
  const double var = kld2_ / n - s.mean_kld * s.mean_kld;
  s.kld_stderr = n > 1 && var > 0 ? std::sqrt(var / (n - 1)) : 0.0;
  const double p = same_top_ / n;
  s.same_top_pct = 100.0 * p;
  s.same_top_stderr = n > 1 ? 100.0 * std::sqrt(p * (1 - p) / (n - 1)) : 0.0;
  s.base_ppl = std::exp(base_nll_ / n);
  s.rms_dp_pct = 100.0 * std::sqrt(dp2_ / n);
  return s;
}

}  // namespace tally::perf
