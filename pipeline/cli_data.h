// `roboloop data …`: the dataset tools of data/ plus `data register` (upload into the registry).
#pragma once

#include <CLI/CLI.hpp>

#include "data/cli.h"
#include "pipeline/cli.h"

namespace roboloop::cli {

// Adds the `data` command tree to `app`. The tools of data/cli.h run while parsing and report
// through `context`; `data register` is bound to `runner`. Returns the `data` subcommand.
CLI::App* AddDataCommands(CLI::App& app, CommandRunner& runner, data::CliContext* context);

}  // namespace roboloop::cli
