#include "absl/strings/numbers.h"
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
  return ComparisonOutputs(candidate, baseline, comparison);
}

std::string ShortReference(const std::string& reference) {
  return reference.size() == 64 && reference.find_first_not_of("0123456789abcdef") == std::string::npos
             ? reference.substr(0, 12)
             : reference;
}

// "<stage>: <candidate> vs <baseline> under <protocol>: success <a> vs <b> over <n> paired
// episodes, McNemar p <p>: <verdict> (<reason>)".
std::vector<std::string> SummarizeCompare(const v1::Stage& stage, const StageOutputs& outputs, StageServices&) {
  auto value = [&outputs](const std::string& name) {
    auto it = outputs.find(name);
    return it == outputs.end() ? std::string("?") : it->second;
  };
  auto number = [&value](const std::string& name) {
    double parsed = 0;
    return absl::SimpleAtod(value(name), &parsed) ? absl::StrFormat("%.3g", parsed) : std::string("?");
  };
  return {absl::StrFormat("%s: %s vs %s under %s: success %s vs %s over %s paired episodes, McNemar p %s: %s (%s)",
                          stage.name(), ShortReference(stage.compare().candidate()),
                          ShortReference(stage.compare().baseline()), stage.compare().protocol(),
                          number("candidate.success"), number("baseline.success"), value("pairs"), number("p_value"),
                          value("verdict"), value("reason"))};
}

}  // namespace

StageOutputs ComparisonOutputs(const v1::Evaluation& candidate, const v1::Evaluation& baseline,
                               const v1::Comparison& comparison) {
  const auto rate = [](const v1::Evaluation& e) { return absl::StrFormat("%.6f", e.aggregates().success().rate()); };
  return StageOutputs{{"verdict", eval::VerdictName(comparison.verdict())},
                      {"p_value", absl::StrFormat("%.6g", comparison.mcnemar_p())},
                      {"candidate.success", rate(candidate)},
                      {"baseline.success", rate(baseline)},
                      {"pairs", absl::StrCat(comparison.pairs())},
                      {"reason", comparison.reason()}};
}

StageKind CompareStageKind() {
  StageKind kind;
  kind.name = "compare";
  kind.params = v1::CompareStage::descriptor();
  kind.outputs = {"verdict", "p_value", "candidate.success", "baseline.success", "pairs", "reason"};
  kind.numeric_outputs = {"p_value", "candidate.success", "baseline.success", "pairs"};
  kind.local_files = [](const v1::Stage& stage) { return ProtocolFiles(stage.compare().protocol()); };
  kind.served_protocols = [](const v1::Stage& stage) { return ServedProtocols(stage.compare().protocol()); };
  kind.run = RunCompare;
  kind.summarize = SummarizeCompare;
  return kind;
}

}  // namespace roboloop::pipeline
