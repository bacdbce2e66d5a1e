// `roboloop pipeline validate`: checks a pipeline spec (pipeline/spec.h) and prints the plan.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Accepts a `--set` value pipeline::ParseOverride reads (PATH=VALUE); CLI11 reports any other as
// a usage error (exit 2) naming the flag and the value.
CLI::Validator OverrideText();

// Adds `pipeline validate FILE [--set PATH=VALUE]...`.
void AddPipelineCommands(CLI::App& app, CommandRunner& runner);

}  // namespace roboloop::cli
