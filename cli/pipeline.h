// `roboloop pipeline validate`: checks a pipeline spec (pipeline/spec.h) and prints the plan.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds `pipeline validate FILE [--set PATH=VALUE]...`.
void AddPipelineCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
