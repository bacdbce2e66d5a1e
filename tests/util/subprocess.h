// Test helper: runs a program to completion and captures its exit code and output.
#pragma once

#include <string>
#include <vector>

namespace roboloop::testing {

// Outcome of RunProgram.
struct ProgramResult {
  int exit_code = -1;   // exit status, or 128 + signal number when killed by a signal
  std::string out;      // everything written to stdout
  std::string err;      // everything written to stderr
};

// Runs `argv[0]` with `argv` and extra environment entries `env` ("NAME=value", added to the
// current environment) in folder `cwd` (empty = the current one), waits for it, and returns
// its exit code and output.
ProgramResult RunProgram(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {}, const std::string& cwd = "");

// A program started by StartProgram; its output goes to the two files.
struct RunningProgram {
  int pid = -1;          // process id (-1 when it could not start)
  std::string out_path;  // its stdout
  std::string err_path;  // its stderr
};

// Starts a program like RunProgram without waiting for it.
RunningProgram StartProgram(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env = {}, const std::string& cwd = "");

// Waits for a started program and collects its result (removing the output files).
ProgramResult FinishProgram(const RunningProgram& running);

// Names of the entries of the folder `dir` (empty when it cannot be read), sorted.
std::vector<std::string> DirectoryEntries(const std::string& dir);

// A program stopped by InterruptOncePartialAppears.
struct InterruptedProgram {
  bool partial_seen = false;  // an entry "*.partial-*" appeared in the folder before the signal was sent
  ProgramResult result;       // the program's outcome
};

// Starts `argv`, waits until the folder `dir` holds an entry whose name contains ".partial-" (checked every
// 10 ms, for at most 30 s), sends the program `signal` and waits for it to end.
InterruptedProgram InterruptOncePartialAppears(const std::vector<std::string>& argv, const std::string& dir,
                                               int signal);

// Path of the built `roboloop` binary.
std::string RoboloopBinary();

// Runs the built `roboloop` binary with the arguments `args` (without the program itself), like
// RunProgram: `env` entries ("NAME=value") are added to the current environment, `cwd` (empty =
// the current folder) is the folder it runs in, stdin is /dev/null. Waits for it to end and
// returns its exit code and output.
ProgramResult RunRoboloop(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                          const std::string& cwd = "");

// A fresh empty directory under the test run's private temp folder (tests/util/test_main.cc
// removes it after a passing run).
std::string MakeTempDir(const std::string& prefix);

// Reads a whole file; empty string if it cannot be read.
std::string ReadWholeFile(const std::string& path);

}  // namespace roboloop::testing
