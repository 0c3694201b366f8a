// What `tally plan <MODEL>` accepts: a preset name ("llama-3-8b"), a path to a .gguf file,
// a path to a config.json, or a folder that holds a config.json.
#pragma once

#include <string>

#include "base/status.h"
#include "plan/plan_model.h"

namespace tally::plan {

// Files are recognised by their content (the GGUF magic, else JSON), not only their name;
// a spec that names no file is looked up among the presets.
Result<PlanModel> plan_model_from_spec(const std::string& spec);

}  // namespace tally::plan
