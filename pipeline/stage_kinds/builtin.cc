#include "pipeline/stage_kinds/builtin.h"

#include "common/status.h"
#include "eval/protocol.h"

namespace roboloop::pipeline {

std::vector<std::string> ProtocolFiles(const std::string& protocol) {
  if (!eval::IsProtocolPath(protocol)) return {};
  return {protocol};
}

std::vector<std::string> ServedProtocols(const std::string& protocol) {
  if (protocol.empty() || eval::IsProtocolPath(protocol)) return {};
  return {protocol};
}

absl::Status RegisterBuiltinStageKinds(StageKindRegistry* kinds) {
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(CollectStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(RelabelStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(MergeStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(TrainStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(EvaluateStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(CompareStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(PromoteStageKind()));
  ROBOLOOP_RETURN_IF_ERROR(kinds->Register(ReportStageKind()));
  return kinds->Register(LoopStageKind());
}

const StageKindRegistry& BuiltinStageKinds() {
  static const StageKindRegistry* const kKinds = [] {
    auto* kinds = new StageKindRegistry();
    const absl::Status status = RegisterBuiltinStageKinds(kinds);
    if (!status.ok()) std::abort();  // the built-in records are fixed: a clash is a programming error
    return kinds;
  }();
  return *kKinds;
}

}  // namespace roboloop::pipeline
