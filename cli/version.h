// `roboloop --version [--verbose]`.
#pragma once

#include "absl/status/status.h"

namespace roboloop::cli {

// Prints the version line; with `verbose`, also loads the torch library on demand and prints
// LibTorch's version and thread settings. Fails if the torch library cannot be loaded.
absl::Status PrintVersion(bool verbose);

}  // namespace roboloop::cli
