// The pipeline scheduler (issue 8, req 3 and 5): runs a validated pipeline's stages as their
// dependencies finish — independent stages concurrently on a Boost.Asio thread pool —
// substituting `${stage.output}` references with the outputs of finished stages, retrying
// transient failures (UNAVAILABLE, DEADLINE_EXCEEDED) with exponential backoff, enforcing
// per-attempt timeouts, repeating loops until their condition holds, and cancelling
// running stages on request. What a stage does is up to its StageExecutor.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pipeline/spec.h"
#include "roboloop/v1/pipeline.pb.h"

namespace roboloop::pipeline {

// Outputs of a finished stage: output name (as in OutputsOf) -> value.
using StageOutputs = std::map<std::string, std::string>;

// How far a running stage is, in its own unit (steps, episodes).
struct StageProgress {
  double done = 0;
  double total = 0;   // 0 = unknown
  std::string unit;   // e.g. "steps"
  std::string note;   // e.g. "loss 0.012"
};

// What an executor gets besides the stage.
struct StageContext {
  std::string label;                                      // "<loop>[<iteration>].<stage>" inside loops
  const std::atomic<bool>* cancel = nullptr;              // never null when the scheduler calls
  std::function<void(const StageProgress&)> progress;     // may be empty
};

// Runs one attempt of a stage whose references are already substituted. `context.cancel` is
// raised on timeout or cancellation; an executor must return soon after (any status).
// Implementations are called from several threads at once, for different stages.
class StageExecutor {
 public:
  virtual ~StageExecutor() = default;
  virtual absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) = 0;
};

// A stage's progress, reported to the observer.
struct StageEvent {
  enum class Kind { kStarted, kRetrying, kFinished, kFailed, kSkipped, kProgress };
  Kind kind = Kind::kStarted;
  std::string stage;    // stage name (inside loops: "<loop>[<iteration>].<stage>")
  int attempt = 1;      // 1-based
  absl::Status status;  // kRetrying / kFailed: why
  StageOutputs outputs; // kFinished
  StageProgress progress; // kProgress
};

// Settings of a run.
struct SchedulerOptions {
  int threads = 4;                                   // stages running at once
  absl::Duration default_backoff = absl::Seconds(1); // first retry delay when a stage sets none
  std::function<void(const StageEvent&)> observer;  // called for every event (any thread, serialised)
  const std::atomic<bool>* cancel = nullptr;        // raise to cancel the run
};

// What a run produced.
struct RunOutcome {
  std::map<std::string, StageOutputs> outputs;  // every finished top-level stage
  std::map<std::string, int> loop_iterations;   // loops: iterations used
};

// Runs `loaded` in the order of its `plan` (from ValidatePipeline). Returns the outcome, or the first failing stage's error
// (annotated with the stage name); Cancelled when cancelled; FailedPrecondition
// "condition not met" when a loop used all its iterations without its condition holding
// (what it produced stays produced).
absl::StatusOr<RunOutcome> RunPipeline(const LoadedPipeline& loaded, const Plan& plan,
                                       StageExecutor& executor, const SchedulerOptions& options);

// `text` with every `${stage.output}` / `${vars.name}` replaced; NotFound naming the first
// reference without a value.
absl::StatusOr<std::string> Substitute(const std::string& text,
                                       const std::map<std::string, StageOutputs>& outputs,
                                       const std::map<std::string, std::string>& vars);

// True for the codes a retry may cure: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED.
bool IsTransient(const absl::Status& status);

}  // namespace roboloop::pipeline
