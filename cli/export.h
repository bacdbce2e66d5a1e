// `roboloop export REF -o DIR`: a registered checkpoint as a self-contained folder that plain
// PyTorch can run (issue 6, req 7; docs/export.md).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds the `export` command to `app`; its action is bound through `runner`.
void AddExportCommand(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
