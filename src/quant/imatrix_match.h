// Matching an importance matrix (io/imatrix_file.h) to the model being quantized: every
// entry must name a tensor of the model with the same row length and number of matrices
// (experts), or the file is refused naming the first mismatch (an imatrix made for another
// model). A legacy entry of an expert tensor holds the experts one after another; it is split
// by the model's shape here.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "io/imatrix_file.h"
#include "plan/plan_model.h"

namespace tally::quant {

// The importance of each matrix of one tensor: [n_mat][n_cols] (n_mat = its experts, or 1).
// A matrix that saw no token gets an empty vector (quantized without importance).
using TensorImportance = std::vector<std::vector<float>>;

// Checks `m` against the model's tensors, then returns the importance of tensor `index` of
// `tensors` for each one (empty where the imatrix has no entry).
Result<std::vector<TensorImportance>> imatrix_match(const io::Imatrix& m, const std::vector<plan::PlanTensor>& tensors,
                                                    const std::string& imatrix_path);

}  // namespace tally::quant
