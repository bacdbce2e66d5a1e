// Process-wide logging through spdlog, to stderr, with a level chosen on the command line.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop {

// Sets the global log level from one of: trace, debug, info, warn, error, off.
// Returns INVALID_ARGUMENT naming the level and the accepted ones otherwise.
absl::Status SetLogLevel(const std::string& level);

// Installs roboloop's stderr logger format ("[time] [level] message"). Idempotent.
void InitLogging();

}  // namespace roboloop
