// Building blocks of the `roboloop` command line (CLI11). Each module's commands attach to the
// root app through an Add*Commands function; their actions run after parsing and report
// failures through CommandResult.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <set>
#include <string>

#include "absl/status/status.h"

namespace roboloop::cli {

// Process exit codes of every roboloop command.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,   // the command ran and failed (bad input file, unreachable service, ...)
  kExitUsage = 2,   // the command line itself is wrong
  kExitConditionNotMet = 3,  // a pipeline's loop ended without its condition
  kExitCancelled = 130,      // stopped by SIGINT/SIGTERM (the run can be resumed)
};

// This program, for the processes it starts of itself (a forked child execs its own binary through it).
inline constexpr char kThisProgram[] = "/proc/self/exe";

// `status` (not OK) marked to make the command exit with `code` instead of kExitError.
absl::Status WithExitCode(absl::Status status, int code);

// Output format of listing commands.
enum class Format { kTable, kJson };

// Adds `--format table|json` to `command`, storing the choice in `format`.
void AddFormatOption(CLI::App* command, Format* format);

// Holds the action chosen while parsing; main runs it once parsing succeeded. Also knows which
// options take glob patterns, for the hints of a refused command line (cli/usage_hints.h).
class CommandRunner {
 public:
  // Makes `command` run `action` when it is the chosen subcommand.
  void Bind(CLI::App* command, std::function<absl::Status()> action);

  // Runs the bound action of the parsed command: kExitOk on success, otherwise prints
  // "roboloop: <message>" to stderr (nothing for an empty message: it was reported) and returns kExitError (kExitUsage for INVALID_ARGUMENT
  // raised before any work, signalled by the action returning an InvalidArgument status with
  // the "usage: " prefix; the code of WithExitCode when the status carries one).
  int Run() const;

  // True when some bound command was chosen.
  bool HasAction() const { return static_cast<bool>(chosen_); }

  // Records that a value of `option` may be a glob pattern, which the command expands itself.
  void MarkTakesPatterns(const CLI::Option* option) { pattern_options_.insert(option); }

  // True when MarkTakesPatterns recorded `option`.
  bool TakesPatterns(const CLI::Option& option) const { return pattern_options_.count(&option) > 0; }

 private:
  std::function<absl::Status()> chosen_;
  std::set<const CLI::Option*> pattern_options_;
};

// A usage error: printed like any error, but exits with kExitUsage.
absl::Status UsageError(const std::string& message);

}  // namespace roboloop::cli
