// Matching an importance matrix to a model (imatrix_match.h).
#include "quant/imatrix_match.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace tally::quant {

Result<std::vector<TensorImportance>> imatrix_match(const io::Imatrix& m, const std::vector<plan::PlanTensor>& tensors,
                                                    const std::string& path) {
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].name, i);
  std::vector<TensorImportance> out(tensors.size());
  for (const auto& [name, e] : m.entries) {
    const auto it = index.find(name);
    if (it == index.end())
      return make_error(ErrorCode::kInvalidArgument,
                        "imatrix {}: entry '{}' is not a tensor of the model (an importance matrix of another model?)",
                        path, name);
    const plan::PlanTensor& t = tensors[it->second];
    const int64_t n_mat = std::max<int64_t>(1, t.n_experts);
    // A legacy entry keeps all experts in one row of values and one count for them all.
    const bool legacy_experts = e.counts.size() == 1 && e.n_mat == 1 && n_mat > 1 && e.n_cols == t.n_cols * n_mat;
    const int64_t n_cols = legacy_experts ? t.n_cols : e.n_cols;
    const int64_t e_mat = legacy_experts ? n_mat : e.n_mat;
    if (n_cols != t.n_cols || e_mat != n_mat)
      return make_error(ErrorCode::kInvalidArgument,
                        "imatrix {}: entry '{}' is {} x {} values, the model's tensor has rows of {} in {} "
                        "matrices (an importance matrix of another model?)",
                        path, name, e.n_cols, e.n_mat, t.n_cols, n_mat);
    TensorImportance imp(static_cast<size_t>(n_mat));
    for (int64_t mat = 0; mat < n_mat; ++mat) {
      const float count = e.counts.size() == 1 ? e.counts[0] : e.counts[static_cast<size_t>(mat)];
      if (!(count > 0.0f)) continue;  // never routed to: no importance
      const float* s = e.sums.data() + mat * n_cols;
      std::vector<float>& v = imp[static_cast<size_t>(mat)];
      v.resize(static_cast<size_t>(n_cols));
      for (int64_t c = 0; c < n_cols; ++c) v[static_cast<size_t>(c)] = s[c] / count;
    }
    out[it->second] = std::move(imp);
  }
  return out;
}

}  // namespace tally::quant
