#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tally {

void log_set_level(const std::string& level) {
  static bool init = [] {
    auto logger = spdlog::stderr_color_mt("tally");
    logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)init;
  auto lvl = spdlog::level::from_str(level);
  if (lvl != spdlog::level::off || level == "off") spdlog::set_level(lvl);
}

}  // namespace tally
