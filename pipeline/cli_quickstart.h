// `roboloop quickstart`: the default run of README command 1. Until the pipeline runner
// exists it is a registry round trip on the embedded store: register a file, list it, fetch
// it back and verify it.
#pragma once

#include <CLI/CLI.hpp>

#include "pipeline/cli.h"

namespace roboloop::cli {

// Adds `quickstart` to `app`.
void AddQuickstartCommand(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
