// `roboloop bench registry`: the benchmarks, runnable from the product binary.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `bench` command tree to `app`.
void AddBenchCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
