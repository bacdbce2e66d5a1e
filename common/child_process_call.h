// Runs a function in a forked child process, so that a crash or an endless loop inside it (for
// example in a third-party library reading a hostile file) becomes an error for the caller
// instead of taking the caller down or holding it forever.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace roboloop {

// What RunInChildProcess runs and how long it may take.
struct ChildCall {
  std::string what;                                  // named in every error, e.g. "f.hdf5: validation"
  absl::Duration time_limit = absl::InfiniteDuration();  // the child is killed when it has not answered by then
};

// Forks; the child runs `work`, sends its value or status back through a pipe and leaves with
// _exit (no atexit handlers, no destructors of the caller's statics). The inner result is what
// `work` returned (a status with the code and message the child returned). The outer status is
// the child's own failure, naming `call.what`:
//  - DeadlineExceeded "<what> did not finish within <limit> and was stopped" (SIGKILL);
//  - Aborted "<what> crashed: its process died of signal N (<name>)";
//  - Aborted "<what> ended without an answer: its process exited with code N";
//  - Internal naming the system call when the pipe or the fork cannot be made.
// Only the calling thread exists in the child: `work` must not need a lock that another thread
// of the caller may hold (call it before starting threads, as the CLI does). The child is killed
// when the calling thread ends (the caller killed while it waits): it is never left behind.
absl::StatusOr<absl::StatusOr<std::string>> RunInChildProcess(
    const ChildCall& call, const std::function<absl::StatusOr<std::string>()>& work);

// How a program run by RunProgramInChildProcess ended on its own.
struct ProgramEnd {
  int exit_code = 0;  // its exit status
  std::string err;    // what it wrote to stderr
};

// Runs the program `argv` (argv[0] a path) in a child process (fork and exec: safe in a caller with other threads,
// whatever they hold), stdin and stdout on /dev/null, and returns how it exited with its stderr. The outer errors
// of RunInChildProcess, naming `call.what`: DeadlineExceeded past the time limit (the program is killed), Aborted
// for a signal (exec failing is exit code 127), Internal when the pipe or the fork cannot be made. The program is
// killed when the calling thread ends.
absl::StatusOr<ProgramEnd> RunProgramInChildProcess(const ChildCall& call, const std::vector<std::string>& argv);

}  // namespace roboloop
