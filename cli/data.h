// `roboloop data …`: the dataset tools plus `data register` (upload into the registry).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {

// Adds the `data` command tree to `app`: the dataset tools (cli/data_tools.h; `data info` also
// takes a registry reference) and `data register`. Returns the `data` subcommand.
CLI::App* AddDataCommands(CLI::App& app, CommandRunner& runner);

// Validates the dataset at `file_or_folder`, stores its statistics, uploads it to the registry
// at `target` and registers it as the next version of `name`, linking the parents in its lineage
// that the registry knows. A LeRobot v3 folder is first imported into the store's dataset cache
// (data::ImportLeRobotCached). Prints the registered name, version and id.
absl::Status RegisterDatasetFile(const wiring::RegistryTarget& target, const std::string& file_or_folder,
                                 const std::string& name);

}  // namespace roboloop::cli
