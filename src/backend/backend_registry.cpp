// Which backend runs a model. One today; a CUDA backend adds a choice here (by build option
// and flag), and nothing in src/model/ changes.
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

namespace tally {

const Backend& default_backend() { return cpu::cpu_backend(); }

}  // namespace tally
