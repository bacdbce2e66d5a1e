// roboloop's own stage kinds (issue 27, req 1), one file each under pipeline/stage_kinds/, and
// their registration.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/stage_kind.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::pipeline {

StageKind CollectStageKind();   // rolls out a policy on SimService and registers the dataset
StageKind RelabelStageKind();   // relabels a dataset's episodes with the task's expert
StageKind MergeStageKind();     // merges registry datasets here and registers the result
StageKind TrainStageKind();     // trains on TrainService, streaming its steps; resumes from its last checkpoint
StageKind EvaluateStageKind();  // evaluates a checkpoint under a protocol (optionally keeps failures)
StageKind CompareStageKind();   // evaluates two checkpoints and compares them paired
StageKind PromoteStageKind();   // promotes a candidate over the champion when it is better
StageKind ReportStageKind();    // writes a model's HTML report
StageKind LoopStageKind();      // repeats a body of stages until a condition holds

// A compare stage's outputs for its two evaluations and their comparison. `p_value` keeps six
// significant digits, so that a p far below 1e-6 is not written as 0.
StageOutputs ComparisonOutputs(const v1::Evaluation& candidate, const v1::Evaluation& baseline,
                               const v1::Comparison& comparison);

// The protocol file `protocol` names ({protocol} when it is a path, eval::IsProtocolPath; none for
// a protocol the eval service loads by name), for StageKind::local_files.
std::vector<std::string> ProtocolFiles(const std::string& protocol);

// The protocol name `protocol` is ({protocol} when it is a name the eval service loads; none for a
// file path or ""), for StageKind::served_protocols.
std::vector<std::string> ServedProtocols(const std::string& protocol);

// Registers every kind above into `kinds`, in that order.
absl::Status RegisterBuiltinStageKinds(StageKindRegistry* kinds);

// A registry holding exactly the built-in kinds (built once; thread-safe to read).
const StageKindRegistry& BuiltinStageKinds();

}  // namespace roboloop::pipeline
