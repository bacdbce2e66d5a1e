// `roboloop eval`, `roboloop promote` and `roboloop serve eval` (issue 7, reqs 4-6): evaluations
// through an EvalServiceHandler over sim endpoints — by default an embedded SimService on a
// unix socket under the store root, reached through the same SimClient as a remote one.
#pragma once

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `eval` and `promote` commands to `app`.
void AddEvaluateCommands(CLI::App& app, CommandRunner& runner);

// OK when `alpha` (the value of `flag`) is a significance level eval::CheckAlpha takes; otherwise
// a usage error naming the flag (0 does not mean the default).
absl::Status CheckAlphaFlag(const char* flag, double alpha);

// Adds `eval` under the `serve` command.
void AddServeEvalCommand(CLI::App* serve, CommandRunner& runner);

}  // namespace roboloop::cli
