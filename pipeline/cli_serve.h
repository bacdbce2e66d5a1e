// `roboloop serve registry`: runs a service until SIGINT/SIGTERM.
#pragma once

#include <CLI/CLI.hpp>

#include "pipeline/cli.h"

namespace roboloop::cli {

// Adds the `serve` command tree to `app`.
void AddServeCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
