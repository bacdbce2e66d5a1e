// `roboloop serve registry`: runs a service until SIGINT/SIGTERM.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `serve` command tree to `app` (with `serve registry`); returns `serve`.
CLI::App* AddServeCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
