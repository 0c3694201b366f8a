// ASCII case folding for names the user types (types, presets, units): "Q4_K" == "q4_k".
// Bytes outside A-Z pass through unchanged, whatever the locale.
#pragma once

#include <string>
#include <string_view>

namespace tally {

// `s` with A-Z turned into a-z.
std::string ascii_lower(std::string_view s);
// Whether a and b are equal once both are ascii_lower'ed.
bool ascii_iequals(std::string_view a, std::string_view b);

}  // namespace tally
