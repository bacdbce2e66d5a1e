// Stage kinds as a typed registry (issue 27, req 1), like tasks: one record per kind holds its
// name, parameters message, outputs, whether its results may be reused across runs, the seeds it
// consumes, how it runs and what the run summary says of it. Validation, dispatch, loop outputs,
// caching and the summary read only from these records. Kinds are registered explicitly:
// RegisterBuiltinStageKinds (pipeline/stage_kinds/builtin.h) for ours, one Register call for one
// of your own (docs/pipelines.md, "Adding a stage kind").
#pragma once

#include <atomic>
#include <functional>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "eval/protocol.h"
#include "pipeline/references.h"
#include "roboloop/v1/pipeline.pb.h"

namespace roboloop::pipeline {

class StageServices;  // what running stages may use (pipeline/stage_services.h)
struct StageKind;

// How far a running stage is, in its own unit (steps, episodes).
struct StageProgress {
  double done = 0;
  double total = 0;   // 0 = unknown
  std::string unit;   // e.g. "steps"
  std::string note;   // e.g. "loss 0.012"
};

// What a running stage gets besides its parameters.
struct StageContext {
  std::string label;                                      // "<loop>[<iteration>].<stage>" inside loops
  const StageKind* kind = nullptr;                        // never null when the scheduler calls
  const common::CancellationToken* cancel = nullptr;      // never null when the scheduler calls
  std::function<void(const StageProgress&)> progress;     // may be empty
  // Where an earlier, stopped execution of this stage (same run, label and parameters) said it
  // could continue from (a train stage: its last checkpoint); "" = start from the beginning.
  std::string resume_point;
  // Records a point this execution could continue from, should it be stopped; may be empty.
  std::function<absl::Status(const std::string&)> record_resume_point;

  // Cancelled("the stage was cancelled: <reason>") once the token is raised, else OK.
  absl::Status CheckCancelled() const;
  // Reports progress when someone listens.
  void Report(double done, double total, const std::string& unit, const std::string& note = "") const;
  // Records `point` through record_resume_point (OK when nobody records).
  absl::Status RecordResumePoint(const std::string& point) const;
};

// Seeds a stage uses, for the rule that gates hold out their seeds (ValidatePipeline).
struct SeedClaims {
  std::vector<eval::SeedRange> consumed;  // episodes it rolls out for data (label: what, e.g. "collect")
  std::string protocol;                   // the evaluation protocol it runs ("" = none)
  bool gate = false;                      // true: its protocol decides (a promotion), not feedback
  bool feeds_training = false;            // true: its rollouts are kept for training (kept failures)
};

// The output of a kind that repeats its body (the loop) that counts its iterations; its other
// outputs are the last values its body's stages produced under their names.
inline constexpr char kLoopIterations[] = "iterations";

// One kind of stage.
struct StageKind {
  std::string name;                                  // the `kind:` value, a Stage field name for ours
  const google::protobuf::Descriptor* params = nullptr;  // its parameters' message type
  std::set<std::string> outputs;                     // names `${stage.OUTPUT}` may use
  std::set<std::string> numeric_outputs;             // those of `outputs` always a number (a loop's `until` tests only these)
  bool reusable_across_runs = true;                  // false: results depend on state outside the params
  bool repeats_body = false;                         // the loop: the scheduler runs its body itself (kLoopIterations)
  bool spawns_ranks = false;                         // true: the stage's `ranks` applies (train)
  // Checks a stage's parameters (of type `params`) beyond their types when the pipeline is validated, e.g. the
  // ranges of a train stage's numbers, NaN and infinities included (validation then leaves those of the
  // parameters to it); InvalidArgument saying what is wrong, one problem a line (empty function: no check).
  std::function<absl::Status(const google::protobuf::Message&)> check_params;
  // The seeds a stage of this kind uses (empty function: none).
  std::function<SeedClaims(const v1::Stage&)> seeds;
  // The files on this machine a stage reads that its parameters only name (a protocol file, local
  // dataset files); their sizes and modification times are part of its cache key (StageCacheKey),
  // so a changed file is not answered from the cache (empty function: none).
  std::function<std::vector<std::string>(const v1::Stage&)> local_files;
  // The protocols a stage names that the eval service loads by name (from its own protocols
  // folder, which may be on another machine); the hash the service reports for each is part of
  // its cache key (StageExecutor::ServedInputs), so a protocol edited there is not answered from
  // the cache (empty function: none).
  std::function<std::vector<std::string>(const v1::Stage&)> served_protocols;
  // Runs one attempt of `stage` (references already substituted); must return soon after
  // `context.cancel` is raised. Empty only for the loop.
  std::function<absl::StatusOr<StageOutputs>(const v1::Stage&, const StageContext&, StageServices&)> run;
  // Lines for the end-of-run summary of a finished stage (`stage` with the run's references
  // substituted where they have values); empty function: nothing to say.
  std::function<std::vector<std::string>(const v1::Stage&, const StageOutputs&, StageServices&)> summarize;
};

// The kinds a pipeline may use. Not thread-safe while registering; read-only afterwards.
class StageKindRegistry {
 public:
  // Adds `kind`. AlreadyExists for a taken name; InvalidArgument without a name, a parameters
  // type, or a run function (unless it repeats a body), or with a numeric output it does not declare.
  absl::Status Register(StageKind kind);

  // The kind named `name`, or null.
  const StageKind* Find(const std::string& name) const;

  // Kind names in registration order (error messages list them so).
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<StageKind>> kinds_;
};

// Copies `stage`'s parameters into `params` (of the kind's parameters type): from the Stage field
// named after the kind for ours, else from the stage's `params:` mapping (unknown keys and wrong
// types are InvalidArgument naming them).
absl::Status StageParams(const v1::Stage& stage, const StageKind& kind, google::protobuf::Message* params);

// StageParams into a fresh message of type T.
template <typename T>
absl::StatusOr<T> StageParamsAs(const v1::Stage& stage, const StageKind& kind) {
  T params;
  absl::Status status = StageParams(stage, kind, &params);
  if (!status.ok()) return status;
  return params;
}

// True when `kind`'s parameters live in a Stage field of the kind's name (ours), false when in
// the generic `params:` mapping (kinds registered outside roboloop's proto).
bool HasOwnStageField(const StageKind& kind);

}  // namespace roboloop::pipeline
