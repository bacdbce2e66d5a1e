#include "absl/strings/str_format.h"
#include "common/status.h"
#include "eval/metrics.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunCompare(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::CompareStage& c = stage.compare();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation candidate, services.EvaluateOnService(c.candidate(), c.protocol(), false, context));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation baseline, services.EvaluateOnService(c.baseline(), c.protocol(), false, context));
  v1::CompareRequest request;
  request.set_candidate(candidate.id());
  request.set_baseline(baseline.id());
  request.set_protocol_hash(candidate.protocol_hash());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Comparison comparison, services.clients().eval().Compare(request));
  return StageOutputs{{"verdict", eval::VerdictName(comparison.verdict())},
                      {"p_value", absl::StrFormat("%.6f", comparison.mcnemar_p())}};
}

}  // namespace

StageKind CompareStageKind() {
  StageKind kind;
  kind.name = "compare";
  kind.params = v1::CompareStage::descriptor();
  kind.outputs = {"verdict", "p_value"};
  kind.run = RunCompare;
  return kind;
}

}  // namespace roboloop::pipeline
