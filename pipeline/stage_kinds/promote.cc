#include "absl/strings/str_format.h"
#include "common/status.h"
#include "eval/protocol.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunPromote(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::PromoteStage& p = stage.promote();
  v1::PromoteCandidateRequest request;
  request.set_model(p.model());
  request.set_candidate(p.candidate());
  ROBOLOOP_RETURN_IF_ERROR(eval::SetRequestProtocol(p.protocol(), &request));
  for (const std::string& sim : services.clients().sim_addresses()) request.add_sim_endpoints(sim);
  context.Report(0, 0, "", "evaluating candidate and champion");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::PromotionDecision decision,
                            services.clients().eval().Promote(request, absl::Hours(24), context.cancel));
  context.Report(1, 1, "", decision.reason());
  return StageOutputs{{"champion", decision.promoted() ? decision.candidate_id() : decision.champion_id()},
                      {"promoted", decision.promoted() ? "true" : "false"}};
}

// "<stage>: champion of <model>: <id> (promoted by this run | kept)" (a pipeline may promote more
// than once: the behaviour-cloning checkpoint, then the loop's), and the champion's leaderboard
// row under the promotion's protocol when the board has it.
std::vector<std::string> SummarizePromote(const v1::Stage& stage, const StageOutputs& outputs, StageServices& services) {
  const std::string champion = outputs.count("champion") ? outputs.at("champion") : "";
  const bool promoted = outputs.count("promoted") && outputs.at("promoted") == "true";
  std::vector<std::string> lines = {absl::StrFormat("%s: champion of %s: %s (%s)", stage.name(), stage.promote().model(),
                                                    champion, promoted ? "promoted by this run" : "kept")};
  v1::LeaderboardRequest request;
  request.set_model(stage.promote().model());
  request.set_top(50);
  absl::StatusOr<v1::LeaderboardResponse> board = services.clients().eval().Leaderboard(request);
  if (!board.ok()) return lines;
  for (const v1::Evaluation& e : board->evaluations()) {
    if (e.checkpoint_id() != champion || e.protocol().name() != stage.promote().protocol()) continue;
    const v1::Aggregates& a = e.aggregates();
    lines.push_back(absl::StrFormat(
        "leaderboard row: %s:v%d under %s: success %.3f [%.3f, %.3f] (%d/%d), return %.2f [%.2f, %.2f]", e.model(),
        e.model_version(), e.protocol().name(), a.success().rate(), a.success().interval().low(),
        a.success().interval().high(), a.success().successes(), a.success().trials(), a.episode_return().mean(),
        a.episode_return().interval().low(), a.episode_return().interval().high()));
    break;
  }
  return lines;
}

}  // namespace

StageKind PromoteStageKind() {
  StageKind kind;
  kind.name = "promote";
  kind.params = v1::PromoteStage::descriptor();
  kind.outputs = {"champion", "promoted"};
  kind.reusable_across_runs = false;  // the champion it compares with lives outside its parameters
  kind.seeds = [](const v1::Stage& stage) { return SeedClaims{{}, stage.promote().protocol(), true}; };
  kind.local_files = [](const v1::Stage& stage) { return ProtocolFiles(stage.promote().protocol()); };
  kind.served_protocols = [](const v1::Stage& stage) { return ServedProtocols(stage.promote().protocol()); };
  kind.run = RunPromote;
  kind.summarize = SummarizePromote;
  return kind;
}

}  // namespace roboloop::pipeline
