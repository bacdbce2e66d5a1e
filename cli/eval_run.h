// `roboloop eval`, `roboloop promote` and `roboloop serve eval` (issue 7, reqs 4-6): evaluations
// through an EvalServiceHandler over sim endpoints — by default an embedded SimService on a
// unix socket under the store root, reached through the same SimClient as a remote one.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `eval` and `promote` commands to `app`.
void AddEvaluateCommands(CLI::App& app, CommandRunner& runner);

// Adds `eval` under the `serve` command.
void AddServeEvalCommand(CLI::App* serve, CommandRunner& runner);

}  // namespace roboloop::cli
