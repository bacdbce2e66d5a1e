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
struct PipelineRunOptions {
  std::string file;                                   // pipeline YAML
  std::vector<std::string> overrides;                 // "PATH=VALUE" (--set), recorded with the run
  std::string resume;                                 // id of an unfinished run of `file` to continue ("" = new)
  std::string services_file;                          // "" = every service embedded under `root`
  std::string root = ".roboloop";                     // store: registry, runs, leaderboard, datasets
  std::string protocols_dir = "configs/protocols";    // named evaluation protocols
  std::string dataset_checker;                        // embedded services: EmbeddedOptions::dataset_checker
  bool use_cache = true;                              // reuse finished stages of other runs
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
  RunOutcome outcome;                // when OK
  std::vector<std::string> summary;  // when OK: loop iterations and what each finished stage's kind says
};

// Runs the pipeline. Errors before the run is recorded (unreadable or invalid pipeline,
// unreachable services, an unknown run to resume) are the returned status; once recorded, the
// run's end is in the result and in the run store ("finished", "cancelled" or "failed").
absl::StatusOr<PipelineRunResult> RunPipelineFile(const PipelineRunOptions& options);

}  // namespace roboloop::pipeline
