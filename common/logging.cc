#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace roboloop {

absl::Status SetLogLevel(const std::string& level) {
  static const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off},
  };
  for (const auto& [name, value] : kLevels) {
    if (level == name) {
      spdlog::set_level(value);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "log level '", level, "' is not one of trace, debug, info, warn, error, off"));
}

void InitLogging() {
  static bool initialised = [] {
    auto logger = spdlog::stderr_color_mt("roboloop");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
    spdlog::set_level(spdlog::level::info);
    return true;
  }();
  (void)initialised;
}

}  // namespace roboloop
