// The importance-matrix collector (imatrix_collector.h).
#include "perf/imatrix_collector.h"

#include "base/check.h"

namespace tally::perf {

ImatrixCollector::ImatrixCollector(const Model& model, bool include_output)
    : gguf_(model.gguf()), include_output_(include_output) {}

const io::GgufTensorInfo* ImatrixCollector::resolve(const MatmulSite& site) const {
  using io::GgufTensor;
  if (site.tensor == GgufTensor::kOutput) {
    if (!include_output_) return nullptr;
    const io::GgufTensorInfo* t = gguf_.find_tensor(io::gguf_tensor_name(GgufTensor::kOutput));
    return t ? t : gguf_.find_tensor(io::gguf_tensor_name(GgufTensor::kTokenEmbd));  // tied
  }
  const io::GgufTensorInfo* t = gguf_.find_tensor(io::gguf_tensor_name(site.tensor, site.layer));
  // A fused attn_qkv is counted once, as its q part (k and v see the same rows); a fused
  // ffn_up (gate and up in one) is found under its own name and its gate part skipped.
  if (!t && site.tensor == GgufTensor::kAttnQ)
    t = gguf_.find_tensor(io::gguf_tensor_name(GgufTensor::kAttnQkv, site.layer));
  return t;
}

void ImatrixCollector::observe(const MatmulSite& site, const float* x, int64_t n_rows, int64_t n_cols) {
  const io::GgufTensorInfo* t = resolve(site);
  if (!t || n_rows == 0) return;
  auto it = sums_.find(t->name);
  if (it == sums_.end()) {
    Sums s;
    s.n_cols = t->dims[0];
    s.n_mat = t->dims.size() >= 3 ? t->dims[2] : 1;
    s.sums.assign(static_cast<size_t>(s.n_cols * s.n_mat), 0.0);
    s.counts.assign(static_cast<size_t>(s.n_mat), 0.0);
    it = sums_.emplace(std::string(t->name), std::move(s)).first;
  }
  Sums& s = it->second;
  TALLY_CHECK(n_cols == s.n_cols, "imatrix: {} takes rows of {}, the product gave {}", t->name, s.n_cols, n_cols);
  const int64_t mat = site.expert >= 0 ? site.expert : 0;
  TALLY_CHECK(mat < s.n_mat, "imatrix: expert {} of {} in {}", mat, s.n_mat, t->name);
  double* sums = s.sums.data() + mat * n_cols;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * n_cols;
    for (int64_t i = 0; i < n_cols; ++i) sums[i] += static_cast<double>(row[i]) * row[i];
  }
  s.counts[static_cast<size_t>(mat)] += static_cast<double>(n_rows);
}

io::Imatrix ImatrixCollector::result(std::vector<std::string> datasets, uint32_t chunk_count,
                                     uint32_t chunk_size) const {
  io::Imatrix m;
  m.datasets = std::move(datasets);
  m.chunk_count = chunk_count;
  m.chunk_size = chunk_size;
  for (const auto& [name, s] : sums_) {
    io::ImatrixEntry e;
    e.n_cols = s.n_cols;
    e.n_mat = s.n_mat;
    e.sums.assign(s.sums.begin(), s.sums.end());
    e.counts.assign(s.counts.begin(), s.counts.end());
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

}  // namespace tally::perf
