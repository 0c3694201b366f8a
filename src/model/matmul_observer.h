// A hook on the forward pass's matrix products, taken only when one is given (`tally imatrix`
// collects each matrix's input activations through it, perf/imatrix_collector.h). It is
// called once per product, never per element, from the thread that calls forward(); the
// normal path pays one null test per product.
#pragma once

#include <cstdint>

#include "io/gguf_tensor_names.h"

namespace tally {

// Which weight a product multiplies: its tensor kind and layer (-1 for model-wide ones) and,
// for the experts of a 3-D expert tensor, the expert (-1 otherwise). Fused matrices are
// named by their parts (q, k, v; gate, up): the observer maps them to the file's tensors.
struct MatmulSite {
  io::GgufTensor tensor = io::GgufTensor::kOutput;
  int32_t layer = -1;
  int32_t expert = -1;
};

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x: [n_rows][n_cols], the rows the matrix multiplies (n_cols = its input width).
  virtual void observe(const MatmulSite& site, const float* x, int64_t n_rows, int64_t n_cols) = 0;
};

}  // namespace tally
