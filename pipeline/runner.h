// Running a pipeline file end to end (issue 27, req 3): the runner API `roboloop run` and tests
// use. It loads and validates the pipeline, starts the embedded services or connects to those a
// services file names, records the run in the run store (or reopens the run it resumes), runs
// the stages through their kinds with the content-keyed cache, and records how the run ended.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "pipeline/scheduler.h"
#include "pipeline/spec.h"
#include "pipeline/stage_kind.h"

namespace roboloop::pipeline {

// A run that has been recorded and is about to start its stages.
struct StartedRun {
  std::string run_id;
  std::string pipeline;  // the pipeline's name
  bool embedded = false; // services started by this process
  std::string log_dir;   // where stage logs go
};

// What to run.
// A resumed run keeps what it was started with: its overrides (the new ones apply on top), its
// services file, protocols folder and --no-cache, unless given again; its pipeline file must
// hold the text it started from.
struct PipelineRunOptions {
  std::string file;                                   // pipeline YAML ("" on resume: the run's own)
  std::vector<std::string> overrides;                 // "PATH=VALUE" (--set), recorded with the run
  std::string resume;                                 // id of an unfinished run of `file` to continue ("" = new)
  std::string services_file;                          // "" = every service embedded under `root` (resume: the run's own)
  std::string root = ".roboloop";                     // store: registry, runs, leaderboard, datasets
  std::string protocols_dir;                          // named evaluation protocols; "" = eval::kDefaultProtocolsDir (resume: the run's own)
  std::string dataset_checker;                        // embedded services: EmbeddedOptions::dataset_checker
  bool use_cache = true;                              // reuse finished stages of other runs (off for good once off)
  int threads = 4;                                    // stages running at once
  const StageKindRegistry* kinds = nullptr;           // null = BuiltinStageKinds()
  const common::CancellationToken* cancel = nullptr;  // cancelling it stops the run (resumable)
  // Called once the run is recorded, before any stage runs; returns the observer of its stage
  // events (an empty function observes nothing). May be empty.
  std::function<std::function<void(const StageEvent&)>(const StartedRun&)> on_start;
};

// How a recorded run ended.
struct PipelineRunResult {
  std::string run_id;
  std::string pipeline;              // the pipeline's name
  // OK; Cancelled; FailedPrecondition for which UnmetLoopOf names the loop; or the first failure.
  absl::Status status;
  RunOutcome outcome;                // what the run produced (when it failed: the stages that finished)
  // When OK or a loop's condition was unmet: loop iterations and what each finished stage's kind says
  std::vector<std::string> summary;
};

// Loads every task file of `loaded` (TaskFiles) as `run` would. InvalidArgument with one line
// per problem, each naming the pipeline file, the line of the task_files entry and the task
// file: a missing file, the task file's own errors, a task two files declare (naming both),
// a task a built-in or plug-in already has.
absl::Status CheckTaskFiles(const LoadedPipeline& loaded);

// `path` as a run records its files (pipeline, services file, protocols folder): absolute and
// normal, so that `--resume` finds them from any working folder ("" stays "").
std::string RecordedPath(const std::string& path);

// The pipeline file to resume run `run_id` with, which recorded `recorded`, given the FILE
// argument `given` ("" when none). Runs record absolute paths; a run recorded before they did
// holds its file relative to the folder it was started from: that path is taken from the working
// folder, and a given FILE counts as the run's own when its path ends with it (the pipeline text's
// hash, where recorded, is checked when the run starts). FailedPrecondition naming the relative
// path when it is not found from here (resume from the folder the run was started in, or pass
// FILE); InvalidArgument naming both when `given` is another file.
absl::StatusOr<std::string> ResumedSpecPath(const std::string& run_id, const std::string& recorded,
                                            const std::string& given);

// Runs the pipeline. Errors before the run is recorded (unreadable or invalid pipeline,
// unreachable services, an unknown run to resume, a resumed run's pipeline file as
// ResumedSpecPath finds it, one whose text changed: FailedPrecondition naming the file) are the
// returned status; once recorded, the
// run's end is in the result and in the run store ("finished", "cancelled" or "failed").
// On remote services the seed checks of validation read a protocol named by name from the eval
// service (GetProtocol), which evaluates under it, so it need not be in `protocols_dir`: one the
// service does not have is a validation error naming the protocol and the service's address; an
// eval service older than GetProtocol has them read from `protocols_dir`, noted once on stderr.
absl::StatusOr<PipelineRunResult> RunPipelineFile(const PipelineRunOptions& options);

}  // namespace roboloop::pipeline
