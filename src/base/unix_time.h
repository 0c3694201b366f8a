// Seconds since the Unix epoch (wall clock): the `created` field of OpenAI responses and models.
#pragma once

#include <chrono>
#include <cstdint>

namespace tally {

inline int64_t unix_seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tally
