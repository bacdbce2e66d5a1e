// References between stages (issue 8, req 1; issue 27): `${stage.output}` and `${vars.name}` in
// any string parameter, the walk over a stage's strings that finds and replaces them, and loop
// conditions `${stage.output} OP NUMBER`. The one definition both validation and the scheduler use.
#pragma once

#include <functional>
#include <google/protobuf/message.h>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roboloop::pipeline {

// Outputs of a finished stage: output name (as its kind declares them) -> value.
using StageOutputs = std::map<std::string, std::string>;

// The references `${...}` in `text`, without the braces (e.g. "train.checkpoint").
std::vector<std::string> ReferencesIn(const std::string& text);

// `text` with every `${stage.output}` / `${vars.name}` replaced; NotFound naming the first
// reference without a value.
absl::StatusOr<std::string> Substitute(const std::string& text,
                                       const std::map<std::string, StageOutputs>& outputs,
                                       const std::map<std::string, std::string>& vars);

// Calls `visit` on every string field of `message` and its sub-messages, except the stages and
// the condition of a loop (those belong to the loop's own scope, resolved per iteration).
// Stops at, and returns, the first error `visit` returns.
absl::Status VisitStageStrings(google::protobuf::Message* message,
                               const std::function<absl::Status(std::string*)>& visit);

// Every reference in the strings VisitStageStrings visits.
std::vector<std::string> ReferencesOfStage(const google::protobuf::Message& stage);

// A loop condition: `${reference} op bound`.
struct LoopCondition {
  std::string reference;  // e.g. "gate.success.lower"
  std::string op;         // >=, <=, ==, > or <
  double bound = 0;
};

// Parses `text`; InvalidArgument "'<text>' is not of the form ${STAGE.OUTPUT} OP NUMBER".
absl::StatusOr<LoopCondition> ParseLoopCondition(const std::string& text);

// Whether `condition` holds for the outputs so far; InvalidArgument when the referenced value
// is not a number, NotFound when it has none.
absl::StatusOr<bool> ConditionHolds(const LoopCondition& condition,
                                    const std::map<std::string, StageOutputs>& outputs,
                                    const std::map<std::string, std::string>& vars);

}  // namespace roboloop::pipeline
