// Validation of a file that may be hostile: ValidateFile in a forked child process, or, in servers,
// `roboloop data validate` as a program of its own, so that a crash or an endless loop inside
// libhdf5 on a corrupt file (docs/RELIABILITY.md, "Findings not fixed here") becomes an error
// naming the file instead of taking the caller down or holding it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "data/validation.h"

namespace roboloop::data {

// What a validation in a child process reports of a file that has no errors.
struct ValidationSummary {
  int64_t demos = 0;                      // demo groups
  int64_t total_steps = 0;                // sum of their num_samples
  std::vector<ValidationIssue> warnings;  // as ValidateFile's, in its order
};

// The time a validation of the file at `path` gets by default: 60 s plus 1 s per 4 MiB of the
// file (60 s where its size cannot be read), far above what reading and decompressing takes on
// local disks or network file systems.
absl::Duration DefaultValidationTimeLimit(const std::string& path);

// ValidateFile(path, options) run in a child process (RunInChildProcess). Returns its summary or
// its error unchanged; where the child crashes or has not finished within `time_limit`
// (InfiniteDuration = no limit), DataLoss naming `path`, what happened and that the file is
// likely corrupt. Call it before the caller starts threads that use libhdf5.
absl::StatusOr<ValidationSummary> ValidateFileInChildProcess(const std::string& path,
                                                             const ValidationOptions& options,
                                                             absl::Duration time_limit);

// The structure check of ValidateFile (no scan of values) in a child process, with the default
// time limit for the file's size: the tools screen a file with it before they read it in their
// own process. OK, or the errors of ValidateFileInChildProcess.
absl::Status ScreenFileInChildProcess(const std::string& path);

// A check of a file from elsewhere before this process reads it: OK or an error naming the file.
using FileScreen = std::function<absl::Status(const std::string& path)>;

// A FileScreen for processes where other threads may be inside libhdf5 (servers), in which a forked child could
// wait forever on libhdf5's global lock: it runs `<roboloop_binary> data validate --structure-only FILE` as a
// program of its own (RunProgramInChildProcess), with the default time limit (which that program enforces) plus
// 30 s. Errors: InvalidArgument with that program's message (a structure error, a crash or the time limit inside
// libhdf5), or DataLoss naming the file when the program itself crashed, hung or did not start.
FileScreen ProgramFileScreen(std::string roboloop_binary);

}  // namespace roboloop::data
