// Logging goes through spdlog to stderr, so stdout stays clean for generated text.
#pragma once

#include <spdlog/spdlog.h>

namespace tally {
// Sets the level from a name ("trace".."off"); unknown names leave it unchanged.
void log_set_level(const std::string& level);
}  // namespace tally
