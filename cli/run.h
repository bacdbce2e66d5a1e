// `roboloop run`, `runs`, `status` and `logs` (issue 8, reqs 3-7): runs a pipeline YAML on
// embedded services (default) or the services of --services FILE, records it in the run
// store under the root, prints live progress and a summary, and inspects past runs.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds `run`, `runs`, `status` and `logs` to `app`.
void AddRunCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
