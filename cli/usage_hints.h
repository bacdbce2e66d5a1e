// Hints for command lines the parser refuses: several files where an option takes one value, as
// when the shell expands an unquoted pattern (`roboloop train --dataset d*.hdf5`), and positional
// arguments a command does not take.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace roboloop::cli {

// An option that takes one value per use, as a hint describes it.
struct OneValueOption {
  std::string name;            // e.g. --dataset
  bool repeatable = false;     // may be given once per value
  bool takes_patterns = false; // a value may be a glob pattern that roboloop expands itself
};

// A glob pattern matching each of `files`: their longest common prefix, '*', then their longest
// common suffix not overlapping that prefix (d*.hdf5 for d1.hdf5 and d2.hdf5).
std::string PatternOf(const std::vector<std::string>& files);

// How to give `files` (two or more) to `option`: quoted as one pattern (PatternOf) when it takes
// patterns, else the option once per file when it is repeatable, else that it takes one file.
// One sentence naming the option and the files (the first three of more).
std::string SeveralFilesHint(const OneValueOption& option, const std::vector<std::string>& files);

// For `args` (the command line after the program name) that parsed into `app` with arguments left
// over (CLI::ExtrasError): when an option taking one value per use is followed by existing files up
// to the next option (its value among them) and those hold every argument left over (the files a
// shell expanded an unquoted pattern into), SeveralFilesHint for those files, `takes_patterns`
// saying which options take patterns; "" otherwise.
std::string UnexpectedFilesHint(const CLI::App& app, const std::vector<std::string>& args,
                                const std::function<bool(const CLI::Option&)>& takes_patterns);

// For `app` that parsed with arguments left over (CLI::ExtrasError), all of them positional (none
// starting with '-'): a message naming the innermost command given, the unexpected arguments and
// what the command takes, then its usage line, e.g.
//   roboloop: data info: unexpected argument 'b.hdf5'; the command takes FILE
//   Usage: roboloop data info [OPTIONS] FILE
// (a command made of subcommands says the argument is not one of them and lists them); "" when an
// argument left over looks like an option.
std::string UnexpectedPositionalsMessage(const CLI::App& app);

// The names of `known` nearest to `given` by edit distance (insertions, deletions, substitutions
// and swaps of neighbours, each counting one), when that distance is at most 2 and less than
// `given`'s length; empty otherwise.
std::vector<std::string> NearestNames(const std::string& given, const std::vector<std::string>& known);

// For `app` that parsed with arguments left over (CLI::ExtrasError, or CLI::RequiredError of a
// command made of subcommands): for each of them that is an option (its "=VALUE" left out) for
// which NearestNames finds options of the innermost command given (their long and short names), or
// a word, when that command takes no positionals, for which it finds subcommands of it, one line
// "unknown option '--fromat'; did you mean '--format'?" ("'A' or 'B'" for several); "" when none.
std::string DidYouMeanHint(const CLI::App& app);

}  // namespace roboloop::cli
