// The CPU backend: backend.h's table of operations implemented by the per-ISA kernels of this
// folder (each op picks its ISA path at run time, as the kernels' own entry points do).
#pragma once

#include "backend/backend.h"

namespace tally::cpu {

// The one instance (the backend has no state).
const Backend& cpu_backend();

}  // namespace tally::cpu
