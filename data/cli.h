// The `roboloop data ...` subcommands (info, validate, stats, merge, split, import aloha),
// wired with CLI11. The lead attaches them to the main binary and adds `data register`.
#pragma once

#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace roboloop::data {

// Where the commands write and what they report back. Must outlive the parse.
struct CliContext {
  std::ostream* out = &std::cout;  // results (tables, JSON)
  std::ostream* err = &std::cerr;  // one-line errors naming the input
  int exit_code = 0;               // set by the command that ran: 0 ok, 1 error
};

// Adds subcommand `data` to `app` with info FILE, validate FILE [--strict], stats FILE,
// merge A B ... -o OUT, split FILE --valid F --seed S and import aloha DIR -o OUT; listing
// commands take --format table|json. A command that fails prints one line to context->err and
// sets context->exit_code = 1; usage errors surface as CLI::ParseError from app.parse.
// Returns the `data` subcommand.
CLI::App* AddDataCommands(CLI::App& app, CliContext* context);

// Parses `args` (e.g. {"data", "info", "f.hdf5"}, without the program name) with an app that
// holds only the data commands, runs the command and returns the exit code: 0 ok, 1 error,
// 2 usage (bad or missing arguments; the message goes to `err`).
int RunDataCommandLine(const std::vector<std::string>& args, std::ostream& out,
                       std::ostream& err);

}  // namespace roboloop::data
