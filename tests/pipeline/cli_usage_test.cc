// The `roboloop` command line's own usage, through the real binary: help text that reads alike in
// every command, and refused command lines that say how to write them.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/subprocess.h"

namespace roboloop::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using roboloop::testing::MakeTempDir;
using roboloop::testing::ProgramResult;
using roboloop::testing::RunRoboloop;

// A folder holding empty files of these names (what a pattern expands to).
std::string FolderWith(const std::vector<std::string>& names) {
  const std::string dir = MakeTempDir("files");
  for (const std::string& name : names) std::ofstream(dir + "/" + name) << "";
  return dir;
}

// The names listed in section `section` ("Subcommands:", "Positionals:") of `help`: the first
// word of each entry line (indented by two spaces; deeper lines continue an entry).
std::vector<std::string> SectionNames(const std::string& help, const std::string& section) {
  std::vector<std::string> names;
  std::istringstream lines(help);
  bool in_section = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != ' ') {
      in_section = line == section;
      continue;
    }
    if (in_section && line.find_first_not_of(' ') == 2) names.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return names;
}

// Every command below `command` (itself included), as the arguments that name it.
void CollectCommands(const std::vector<std::string>& command, std::vector<std::vector<std::string>>* all) {
  all->push_back(command);
  std::vector<std::string> help_args = command;
  help_args.push_back("--help");
  const ProgramResult help = RunRoboloop(help_args);
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const std::string& sub : SectionNames(help.out, "Subcommands:")) {
    std::vector<std::string> child = command;
    child.push_back(sub);
    CollectCommands(child, all);
  }
}

// Positional arguments are named in capitals (FILE, REF, CONFIG) in every command's help, data's too.
TEST(CliUsageTest, EveryPositionalIsNamedInCapitals) {
  std::vector<std::vector<std::string>> commands;
  CollectCommands({}, &commands);
  EXPECT_GE(commands.size(), 30u);
  int positionals = 0;
  for (std::vector<std::string> command : commands) {
    command.push_back("--help");
    const ProgramResult help = RunRoboloop(command);
    for (const std::string& name : SectionNames(help.out, "Positionals:")) {
      ++positionals;
      const bool lowercase = std::any_of(name.begin(), name.end(), [](char c) { return std::islower(c) != 0; });
      EXPECT_FALSE(lowercase) << command[0] << " " << (command.size() > 2 ? command[1] : "") << ": " << name;
    }
  }
  EXPECT_GE(positionals, 20);
}

// `train --dataset d*.hdf5` unquoted: the shell gives three files where --dataset takes one; the
// error says to quote the pattern (roboloop expands it) or to repeat --dataset.
TEST(CliUsageTest, ExpandedDatasetPatternSaysToQuoteIt) {
  const std::string dir = FolderWith({"d1.hdf5", "d2.hdf5", "d3.hdf5"});
  const ProgramResult refused =
      RunRoboloop({"train", "--dataset", "d1.hdf5", "d2.hdf5", "d3.hdf5", "--steps", "2"}, {}, dir);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("The following argument was not expected: d3.hdf5\n"
                                     "--dataset takes one value, not the 3 files d1.hdf5 d2.hdf5 d3.hdf5"));
  EXPECT_THAT(refused.err, HasSubstr("quote the pattern so that roboloop expands it, e.g. --dataset 'd*.hdf5', "
                                     "or give --dataset once per file"));
  const ProgramResult joined = RunRoboloop({"train", "cfg.yaml", "--dataset=d1.hdf5", "d2.hdf5"}, {}, dir);
  EXPECT_EQ(joined.exit_code, 2);
  EXPECT_THAT(joined.err, HasSubstr("e.g. --dataset 'd*.hdf5'"));
}

// Two files: the second takes the place of CONFIG, which is then named as an HDF5 file with the same hint.
TEST(CliUsageTest, ExpandedPatternInConfigPlaceSaysToQuoteIt) {
  const std::string dir = FolderWith({"run-a.hdf5", "run-b.hdf5"});
  const ProgramResult refused = RunRoboloop({"train", "--dataset", "run-a.hdf5", "run-b.hdf5"}, {}, dir);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("CONFIG run-b.hdf5 is an HDF5 file, not a YAML TrainConfig; --dataset takes "
                                     "one value, not the 2 files run-a.hdf5 run-b.hdf5"));
  EXPECT_THAT(refused.err, HasSubstr("e.g. --dataset 'run-*.hdf5'"));
}

// An option without patterns is said to take one file; arguments that are not files are named as
// arguments the command does not take.
TEST(CliUsageTest, OtherOneValueOptionsSayTheyTakeOneFile) {
  const std::string dir = FolderWith({"a.token", "b.token"});
  const ProgramResult files = RunRoboloop({"sim", "tasks", "--sim-token-file", "a.token", "b.token"}, {}, dir);
  EXPECT_EQ(files.exit_code, 2);
  EXPECT_THAT(files.err, HasSubstr("--sim-token-file takes one file, not the 2 files a.token b.token\n"));
  EXPECT_THAT(files.err, Not(HasSubstr("quote")));
  const ProgramResult words = RunRoboloop({"leaderboard", "--model", "a.token", "other"}, {}, dir);
  EXPECT_EQ(words.exit_code, 2);
  EXPECT_EQ(words.err,
            "roboloop: leaderboard: unexpected argument 'other'; the command takes no positional arguments\n"
            "Usage: roboloop leaderboard [OPTIONS]\n"
            "Run with --help for more information.\n");
}

// A positional argument a command does not take is named with the command and its usage line, in
// every command (one place in main); an unknown option keeps CLI11's message.
TEST(CliUsageTest, AnExtraPositionalNamesTheCommandTheArgumentAndTheUsage) {
  const ProgramResult info = RunRoboloop({"data", "info", "a.hdf5", "b.hdf5"});
  EXPECT_EQ(info.exit_code, 2);
  EXPECT_EQ(info.err,
            "roboloop: data info: unexpected argument 'b.hdf5'; the command takes FILE\n"
            "Usage: roboloop data info [OPTIONS] FILE\n"
            "Run with --help for more information.\n");
  EXPECT_EQ(info.out, "");
  const ProgramResult tasks = RunRoboloop({"sim", "tasks", "one", "two"});
  EXPECT_EQ(tasks.exit_code, 2);
  EXPECT_THAT(tasks.err, HasSubstr("roboloop: sim tasks: unexpected arguments 'one' 'two'; the command takes no "
                                   "positional arguments\nUsage: roboloop sim tasks [OPTIONS]\n"));
  const ProgramResult command = RunRoboloop({"evaluate"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_THAT(command.err, HasSubstr("roboloop: unknown command 'evaluate' (its commands: registry, data, sim, "));
  const ProgramResult option = RunRoboloop({"data", "info", "a.hdf5", "--bogus"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_THAT(option.err, HasSubstr("The following argument was not expected: --bogus"));
}

// A mistyped command or option is answered with the nearest known name (edit distance 2 at most), in
// every command; a name far from all gets no guess.
TEST(CliUsageTest, AMistypedCommandOrOptionSaysWhatWasMeant) {
  const ProgramResult top = RunRoboloop({"trian"});
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_THAT(top.err, HasSubstr("roboloop: unknown command 'trian' (its commands: "));
  EXPECT_THAT(top.err, HasSubstr("; did you mean 'train'?\n"));
  const ProgramResult sub = RunRoboloop({"registry", "lss"});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_THAT(sub.err, HasSubstr("roboloop: registry: unknown command 'lss' (its commands: "));
  EXPECT_THAT(sub.err, HasSubstr("did you mean 'ls'?"));
  const ProgramResult with_options = RunRoboloop({"trian", "--steps", "3"});
  EXPECT_EQ(with_options.exit_code, 2);
  EXPECT_THAT(with_options.err, HasSubstr("unknown command 'trian'; did you mean 'train'?"));
  const ProgramResult sub_with_options = RunRoboloop({"registry", "lss", "--root", "x"});
  EXPECT_EQ(sub_with_options.exit_code, 2);
  EXPECT_THAT(sub_with_options.err, HasSubstr("unknown command 'lss'; did you mean 'ls'?"));
  const ProgramResult option = RunRoboloop({"data", "info", "a.hdf5", "--fromat", "json"});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_THAT(option.err, HasSubstr("unknown option '--fromat'; did you mean '--format'?"));
  const ProgramResult with_value = RunRoboloop({"runs", "--limt=3"});
  EXPECT_EQ(with_value.exit_code, 2);
  EXPECT_THAT(with_value.err, HasSubstr("unknown option '--limt'; did you mean '--limit'?"));
  const ProgramResult required = RunRoboloop({"sim", "rollout", "--task", "reacher", "--episode", "1"});
  EXPECT_EQ(required.exit_code, 2);
  EXPECT_THAT(required.err, HasSubstr("unknown option '--episode'; did you mean '--episodes'?"));
  EXPECT_THAT(RunRoboloop({"evaluate"}).err, Not(HasSubstr("did you mean")));
  EXPECT_THAT(RunRoboloop({"data", "info", "a.hdf5", "--bogus"}).err, Not(HasSubstr("did you mean")));
}

}  // namespace
}  // namespace roboloop::cli
