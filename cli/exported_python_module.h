// The source of python/roboloop_policy.py, compiled into the CLI so that `roboloop export`
// writes self-contained folders wherever the binary is installed.
#pragma once

#include "absl/strings/string_view.h"

namespace roboloop::cli {

// The text of python/roboloop_policy.py as it was when the binary was built.
absl::string_view ExportedPythonModule();

}  // namespace roboloop::cli
