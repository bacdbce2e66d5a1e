#include "pipeline/stage_executor.h"

#include "absl/strings/str_cat.h"

namespace roboloop::pipeline {

absl::StatusOr<StageOutputs> ServiceStageExecutor::Run(const v1::Stage& stage, const StageContext& context) {
  if (context.kind == nullptr || !context.kind->run) {
    return absl::InvalidArgumentError(absl::StrCat("stage ", context.label, ": no run function for kind '",
                                                   stage.kind(), "'"));
  }
  return context.kind->run(stage, context, services_);
}

}  // namespace roboloop::pipeline
