// The memory ledger as people read it: what `tally serve` prints at start-up and the
// throughput benchmark puts in its report (the same figures `tally plan` computes ahead).
#pragma once

#include <string>

#include "engine/engine_types.h"

namespace tally {

// Several lines, each ending in '\n', every line indented by `indent`:
//   weights   607.23 MiB (0 B mapped + 607.23 MiB owned)
//   buffers   ...
//   kv cache  512.00 MiB = 745 blocks x 16 tokens = 11920 tokens x 44.00 KiB
//   other     ...
//   total     ...
std::string format_ledger(const MemoryLedger& ledger, const std::string& indent = "  ");

}  // namespace tally
