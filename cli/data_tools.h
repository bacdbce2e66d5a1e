// The dataset tools of `roboloop data` (info, validate, stats, merge, split, import aloha) over
// data/tools.h. Like every command they run after parsing, through the CommandRunner: results go
// to stdout, a failure is "roboloop: data <tool>: <what>" (exit 1), a bad command line exits 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "cli/cli.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {

// Turns the argument of `data info|validate|stats` into a local file, e.g. a registry reference
// (looked up in the registry the command's --registry/--root flags name) into a cached copy; an
// error says why not.
using DatasetResolver =
    std::function<absl::StatusOr<std::string>(const std::string& file_or_ref, const wiring::RegistryTarget& target)>;

// Adds info|validate|stats FILE|REF [registry flags] (validate --strict, stats --write), merge A B ... -o OUT,
// split FILE --valid F --seed S and import aloha DIR -o OUT under `data`; listing tools take
// --format table|json. `resolve_input` (may be empty: the argument is a file) resolves the FILE|REF arguments.
void AddDataToolCommands(CLI::App* data, CommandRunner& runner, DatasetResolver resolve_input);

}  // namespace roboloop::cli
