// The dataset tools of `roboloop data` (info, validate, stats, merge, split, import aloha) over
// data/tools.h. Like every command they run after parsing, through the CommandRunner: results go
// to stdout, a failure is "roboloop: data <tool>: <what>" (exit 1), a bad command line exits 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "cli/cli.h"

namespace roboloop::cli {

// Adds info FILE, validate FILE [--strict], stats FILE, merge A B ... -o OUT, split FILE --valid F
// --seed S and import aloha DIR -o OUT under `data`; listing tools take --format table|json.
// `resolve_input` (may be empty) turns `data info`'s argument into a local file, e.g. a registry
// reference into a cached copy; when it fails, the argument is used as given.
void AddDataToolCommands(CLI::App* data, CommandRunner& runner,
                         std::function<absl::StatusOr<std::string>(const std::string&)> resolve_input);

}  // namespace roboloop::cli
