// `tally imatrix`'s collector: a MatmulObserver (model/matmul_observer.h) that adds up, for
// every weight matrix the forward pass multiplies, the squared activation of each input
// column over all tokens, with the number of tokens (per expert for a 3-D expert tensor):
// llama.cpp's importance matrix, written with io/imatrix_file.h. Sums are kept in double
// and in the order the products come, so the result is the same for any thread count.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/imatrix_file.h"
#include "model/matmul_observer.h"
#include "model/model.h"

namespace tally::perf {

class ImatrixCollector final : public MatmulObserver {
 public:
  // include_output: also collect output.weight (llama-imatrix leaves it out by default; it
  // is quantized to q6_K/q8_0 in the mixes).
  explicit ImatrixCollector(const Model& model, bool include_output = false);

  void observe(const MatmulSite& site, const float* x, int64_t n_rows, int64_t n_cols) override;

  io::Imatrix result(std::vector<std::string> datasets, uint32_t chunk_count, uint32_t chunk_size) const;

 private:
  struct Sums {
    int64_t n_cols = 0, n_mat = 1;
    std::vector<double> sums;    // [n_mat][n_cols]
    std::vector<double> counts;  // [n_mat]
  };
  // The file's tensor a product multiplies, or null to skip it (a part of a fused matrix that
  // was already counted, a norm-like product, the output unless asked for).
  const io::GgufTensorInfo* resolve(const MatmulSite& site) const;

  const io::GgufFile& gguf_;
  bool include_output_;
  std::map<std::string, Sums, std::less<>> sums_;
};

}  // namespace tally::perf
