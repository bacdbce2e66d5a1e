// `roboloop registry put|get|ls|show|alias|promote|history|lineage|verify|gc`.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `registry` command tree to `app`; actions are bound through `runner`.
void AddRegistryCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
