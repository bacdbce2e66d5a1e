#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

std::string Number(double value) { return absl::StrFormat("%.6f", value); }

// Success and return of an evaluation as stage outputs.
StageOutputs EvaluationOutputs(const v1::Evaluation& evaluation) {
  const v1::Aggregates& a = evaluation.aggregates();
  return {{"evaluation", evaluation.id()},
          {"success.rate", Number(a.success().rate())},
          {"success.lower", Number(a.success().interval().low())},
          {"success.upper", Number(a.success().interval().high())},
          {"return.mean", Number(a.episode_return().mean())},
          {"return.lower", Number(a.episode_return().interval().low())},
          {"return.upper", Number(a.episode_return().interval().high())},
          {"failures", ""}};
}

absl::StatusOr<StageOutputs> RunEvaluate(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::EvaluateStage& e = stage.evaluate();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation evaluation,
                            services.EvaluateOnService(e.checkpoint(), e.protocol(), e.force(), context));
  StageOutputs outputs = EvaluationOutputs(evaluation);
  if (e.keep_failures()) {
    ROBOLOOP_ASSIGN_OR_RETURN(outputs["failures"], services.RegisterFailures(
                                                       evaluation, services.DefaultName(context.label) + "-failures", context));
  }
  return outputs;
}

// "<stage>: <protocol> success <rate> [<lower>, <upper>], return <mean> [<lower>, <upper>]".
std::vector<std::string> SummarizeEvaluate(const v1::Stage& stage, const StageOutputs& outputs, StageServices&) {
  auto value = [&outputs](const std::string& name) {
    auto it = outputs.find(name);
    double number = 0;
    if (it == outputs.end() || !absl::SimpleAtod(it->second, &number)) return std::string("?");
    return absl::StrFormat("%.3f", number);
  };
  return {absl::StrFormat("%s: %s success %s [%s, %s] (Wilson 95 %%), return %s [%s, %s]", stage.name(),
                          stage.evaluate().protocol(), value("success.rate"), value("success.lower"),
                          value("success.upper"), value("return.mean"), value("return.lower"), value("return.upper"))};
}

}  // namespace

StageKind EvaluateStageKind() {
  StageKind kind;
  kind.name = "evaluate";
  kind.params = v1::EvaluateStage::descriptor();
  kind.outputs = {"evaluation",  "success.rate", "success.lower", "success.upper",
                  "return.mean", "return.lower", "return.upper",  "failures"};
  kind.numeric_outputs = {"success.rate", "success.lower", "success.upper", "return.mean", "return.lower", "return.upper"};
  kind.seeds = [](const v1::Stage& stage) {
    return SeedClaims{{}, stage.evaluate().protocol(), false, stage.evaluate().keep_failures()};
  };
  kind.local_files = [](const v1::Stage& stage) { return ProtocolFiles(stage.evaluate().protocol()); };
  kind.served_protocols = [](const v1::Stage& stage) { return ServedProtocols(stage.evaluate().protocol()); };
  kind.run = RunEvaluate;
  kind.summarize = SummarizeEvaluate;
  return kind;
}

}  // namespace roboloop::pipeline
