// Memory amounts as people write them: "80GiB" (2^30 bytes each), "24GB" (10^9 each),
// "512MiB", "1.5 GiB", or plain bytes "1073741824". Binary (KiB, MiB, GiB, TiB) and decimal
// (KB, MB, GB, TB) units are kept apart; a bare "G"/"M"/"K" is refused as ambiguous.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tally::plan {

// Bytes of a memory amount (rounded down to a whole byte); InvalidArgument names the text.
Result<int64_t> parse_memory_size(std::string_view text);

// "512 B", "128.00 KiB", "14.96 GiB": binary units, two decimals above bytes.
std::string format_bytes(int64_t bytes);

}  // namespace tally::plan
