// `roboloop sim tasks|rollout|collect|relabel|replay` and `roboloop serve sim`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `sim` command tree to `app`.
void AddSimCommands(CLI::App& app, CommandRunner& runner);

// Adds `sim` under the `serve` command.
void AddServeSimCommand(CLI::App* serve, CommandRunner& runner);

}  // namespace roboloop::cli
