// `roboloop leaderboard` and `roboloop compare` over the stored evaluations of
// <root>/eval/leaderboard.db (issue 7, req 6).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `leaderboard` and `compare` commands to `app`, and `eval` and `promote`
// (cli/eval_run.h).
void AddEvalCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
