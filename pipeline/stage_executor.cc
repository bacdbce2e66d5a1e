#include "pipeline/stage_executor.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::pipeline {

absl::StatusOr<StageOutputs> ServiceStageExecutor::Run(const v1::Stage& stage, const StageContext& context) {
  if (context.kind == nullptr || !context.kind->run) {
    return absl::InvalidArgumentError(absl::StrCat("stage ", context.label, ": no run function for kind '",
                                                   stage.kind(), "'"));
  }
  return context.kind->run(stage, context, services_);
}

absl::StatusOr<std::vector<std::string>> ServiceStageExecutor::ServedInputs(const v1::Stage& stage,
                                                                           const StageContext& context) {
  std::vector<std::string> inputs;
  if (context.kind == nullptr || !context.kind->served_protocols) return inputs;
  for (const std::string& name : context.kind->served_protocols(stage)) {
    ROBOLOOP_ASSIGN_OR_RETURN(const std::string hash, services_.ServedProtocolHash(name));
    inputs.push_back(absl::StrCat("protocol ", name, " ", hash));
  }
  return inputs;
}

}  // namespace roboloop::pipeline
