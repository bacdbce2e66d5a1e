// The pipeline scheduler (issue 8, req 3 and 5): runs a validated pipeline's stages as their
// dependencies finish — independent stages concurrently on a Boost.Asio thread pool —
// substituting `${stage.output}` references with the outputs of finished stages, retrying
// transient failures (UNAVAILABLE, DEADLINE_EXCEEDED) with exponential backoff, enforcing
// per-attempt timeouts, repeating loops until their condition holds, and cancelling running
// stages on request or when one of them fails. What a stage does is up to its StageExecutor.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cancellation.h"
#include "pipeline/spec.h"
#include "roboloop/v1/pipeline.pb.h"

namespace roboloop::pipeline {

// Runs one attempt of a stage whose references are already substituted. `context.cancel` is
// raised on timeout, on cancellation of the run and when another stage fails; an executor must
// return soon after (any status). Implementations are called from several threads at once, for
// different stages.
class StageExecutor {
 public:
  virtual ~StageExecutor() = default;
  virtual absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) = 0;
  // Text that stands for what `stage` reads through the services beyond its parameters (a
  // protocol the eval service loads by name: its hash) and changes when that does, for the
  // stage's cache key (RecordingExecutor); none by default. An error fails the attempt.
  virtual absl::StatusOr<std::vector<std::string>> ServedInputs(const v1::Stage& /*stage*/,
                                                                 const StageContext& /*context*/) {
    return std::vector<std::string>{};
  }
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

struct RunOutcome;

// Settings of a run.
struct SchedulerOptions {
  int threads = 4;                                   // stages running at once
  absl::Duration default_backoff = absl::Seconds(1); // first retry delay when a stage sets none
  std::function<void(const StageEvent&)> observer;  // called for every event (any thread, serialised)
  const common::CancellationToken* cancel = nullptr;  // cancel it to cancel the run (may be null)
  // When set, receives what the run produced also when it fails (the top-level stages that finished, the loops'
  // iterations), e.g. to summarize a run whose loop ended with its condition unmet. May be null.
  RunOutcome* produced = nullptr;
};

// A loop that used all its iterations without its condition holding.
struct UnmetLoop {
  std::string loop;       // its label
  std::string condition;  // its `until`
  int iterations = 0;     // iterations it ran
};

// The unmet loop a run's error reports, when that is what ended the run; nullopt otherwise.
std::optional<UnmetLoop> UnmetLoopOf(const absl::Status& status);

// What a run produced.
struct RunOutcome {
  std::map<std::string, StageOutputs> outputs;  // every finished top-level stage
  std::map<std::string, int> loop_iterations;   // loops: iterations used
  // loops: per iteration (in order), the outputs of the body's finished stages by name
  std::map<std::string, std::vector<std::map<std::string, StageOutputs>>> loop_bodies;
};

// Runs `loaded` in the order of its `plan` (from ValidatePipeline), dispatching every stage but
// loops to `executor` with its kind's record in the context. Returns the outcome, or the first
// failing stage's error (annotated with the stage name) — the first failure cancels the stages
// still running and starts no more; Cancelled when the run is cancelled; when a loop used all its
// iterations without its condition holding, FailedPrecondition for which UnmetLoopOf says which
// (what it produced stays produced). A loop's outputs are `iterations` and, of the other outputs
// its kind declares, the last value a stage of its body produced.
absl::StatusOr<RunOutcome> RunPipeline(const LoadedPipeline& loaded, const Plan& plan,
                                       StageExecutor& executor, const SchedulerOptions& options);

// True for the codes a retry may cure: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED.
bool IsTransient(const absl::Status& status);

}  // namespace roboloop::pipeline
