// `roboloop report` (issue 7, req 7): the self-contained HTML report of a model — or of the
// model a pipeline run promoted — from the registry and the leaderboard.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds `report` to `app`.
void AddReportCommand(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
