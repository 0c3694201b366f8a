// Built-in shapes of well-known models, so `tally plan llama-3-8b` works without a file.
// Each preset's hyper-parameters are those published in the model's config.json (HF) or
// params (llama2.c); plan_presets.cpp names the source of each.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/plan_model.h"

namespace tally::plan {

// The preset called `name` (case-insensitive); NotFound lists the known names.
Result<PlanModel> plan_preset(std::string_view name);
std::vector<std::string> plan_preset_names();

}  // namespace tally::plan
