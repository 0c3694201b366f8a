// A Plan for people (an aligned table with KiB/MiB/GiB) and for programs (JSON with every
// figure in bytes). `tally plan` prints one or the other.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plan/plan.h"

namespace tally::plan {

std::string plan_table(const Plan& plan);
nlohmann::json plan_json(const Plan& plan);

}  // namespace tally::plan
