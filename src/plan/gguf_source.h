// A PlanModel from a GGUF file: hyper-parameters from `<arch>.*` metadata (arch =
// general.architecture) and the real type and size of every tensor, so a mixed file
// (q4_K_M: q4_K with some q6_K) is planned with its exact bytes.
#pragma once

#include <string>

#include "base/status.h"
#include "io/gguf.h"
#include "plan/plan_model.h"

namespace tally::plan {

Result<PlanModel> plan_model_from_gguf(const io::GgufFile& file);
// Opens (maps) the file, reads its header and tensor table; the weights are not read.
Result<PlanModel> plan_model_from_gguf_path(const std::string& path);

}  // namespace tally::plan
