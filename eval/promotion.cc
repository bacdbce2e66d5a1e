#include "eval/promotion.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "eval/metrics.h"
#include "eval/protocol.h"
#include "eval/training_seeds.h"

namespace roboloop::eval {
namespace {

absl::StatusOr<v1::Evaluation> EvaluateUnder(const EvalServiceHandler& evaluations, const std::string& checkpoint_id,
                                             const PromotionRequest& request) {
  v1::EvaluateRequest evaluate;
  evaluate.set_checkpoint_ref(checkpoint_id);
  *evaluate.mutable_protocol() = request.protocol;
  for (const std::string& endpoint : request.sim_endpoints) evaluate.add_sim_endpoints(endpoint);
  return evaluations.Evaluate(evaluate, request.requested_by, {}, nullptr);
}

std::string ProtocolLabel(const v1::Evaluation& e) {
  return absl::StrCat("protocol '", e.protocol().name(), "' (", e.protocol_hash(), ")");
}

std::string DescribeComparison(const v1::Comparison& c, const v1::Evaluation& candidate,
                               const v1::Evaluation& champion) {
  return absl::StrFormat(
      "candidate evaluation %s vs champion evaluation %s under %s: %s at alpha %g (McNemar p = %.4g, "
      "b = %d, c = %d; return difference %.4g [%.4g, %.4g]; %s)",
      candidate.id(), champion.id(), ProtocolLabel(candidate), VerdictName(c.verdict()), c.alpha(), c.mcnemar_p(),
      c.candidate_only(), c.baseline_only(), c.return_difference().mean(), c.return_difference().interval().low(),
      c.return_difference().interval().high(), c.reason());
}

absl::Status MoveChampion(registry::RegistryClient& registry, const PromotionRequest& request,
                          PromotionOutcome& outcome) {
  v1::PromoteRequest promote;
  promote.set_model(request.model);
  promote.set_alias(kChampionAlias);
  promote.set_ref(outcome.candidate_id);
  promote.set_reason(outcome.reason);
  ROBOLOOP_RETURN_IF_ERROR(registry.Promote(promote).status());
  outcome.promoted = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PromotionOutcome> PromoteIfBetter(const EvalServiceHandler& evaluations,
                                                 registry::RegistryClient& registry,
                                                 const PromotionRequest& request) {
  if (request.model.empty()) return absl::InvalidArgumentError("promotion needs a model");
  const std::string ref = request.candidate_ref.empty() ? request.model + "@latest" : request.candidate_ref;
  absl::StatusOr<v1::Checkpoint> candidate = registry.GetCheckpoint(ref);
  if (!candidate.ok()) return Annotate(candidate.status(), absl::StrCat("candidate ", ref));
  if (candidate->model() != request.model) {
    return absl::InvalidArgumentError(absl::StrCat("candidate ", ref, " belongs to model ", candidate->model(),
                                                   ", not ", request.model));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<SeedRange> used,
                            TrainingSeedRanges(registry, candidate->id(), request.dataset_cache_dir));
  ROBOLOOP_RETURN_IF_ERROR(
      Annotate(CheckSeedsDisjoint(request.protocol, used),
               absl::StrCat("promotion of ", ref, " needs a protocol disjoint from its training seeds")));
  PromotionOutcome outcome;
  outcome.candidate_id = candidate->id();
  ROBOLOOP_ASSIGN_OR_RETURN(outcome.candidate, EvaluateUnder(evaluations, candidate->id(), request));
  absl::StatusOr<v1::Checkpoint> champion = registry.GetCheckpoint(absl::StrCat(request.model, "@", kChampionAlias));
  if (!champion.ok() && !absl::IsNotFound(champion.status())) return champion.status();
  if (!champion.ok()) {
    outcome.reason = absl::StrCat("first champion: candidate evaluation ", outcome.candidate.id(), " under ",
                                  ProtocolLabel(outcome.candidate), " (no champion to compare with)");
    ROBOLOOP_RETURN_IF_ERROR(MoveChampion(registry, request, outcome));
    return outcome;
  }
  outcome.champion_id = champion->id();
  if (champion->id() == candidate->id()) {
    outcome.reason = absl::StrCat(ref, " is the champion already");
    return outcome;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(outcome.champion, EvaluateUnder(evaluations, champion->id(), request));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Comparison comparison,
                            ComparePaired(outcome.candidate.episodes(), outcome.champion->episodes(),
                                          CompareOptionsAt(request.alpha)));
  comparison.set_protocol_hash(outcome.candidate.protocol_hash());
  comparison.set_candidate_evaluation_id(outcome.candidate.id());
  comparison.set_baseline_evaluation_id(outcome.champion->id());
  outcome.comparison = comparison;
  outcome.reason = DescribeComparison(comparison, outcome.candidate, *outcome.champion);
  if (comparison.verdict() == v1::VERDICT_BETTER) ROBOLOOP_RETURN_IF_ERROR(MoveChampion(registry, request, outcome));
  return outcome;
}

absl::StatusOr<PromotionRequest> PromotionRequestFrom(const v1::PromoteCandidateRequest& request,
                                                      const std::string& protocols_dir,
                                                      const std::string& dataset_cache_dir) {
  PromotionRequest promotion;
  promotion.model = request.model();
  promotion.candidate_ref = request.candidate();
  if (request.alpha() != 0.0) promotion.alpha = request.alpha();
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckAlpha(promotion.alpha), "promotion"));
  promotion.sim_endpoints.assign(request.sim_endpoints().begin(), request.sim_endpoints().end());
  promotion.dataset_cache_dir = dataset_cache_dir;
  if (request.has_protocol()) {
    promotion.protocol = request.protocol();
  } else {
    ROBOLOOP_ASSIGN_OR_RETURN(promotion.protocol, LoadProtocol(request.protocol_name(), protocols_dir));
  }
  return promotion;
}

v1::PromotionDecision PromotionDecisionOf(const PromotionOutcome& outcome) {
  v1::PromotionDecision decision;
  decision.set_promoted(outcome.promoted);
  decision.set_candidate_id(outcome.candidate_id);
  decision.set_champion_id(outcome.champion_id);
  *decision.mutable_candidate() = outcome.candidate;
  decision.mutable_candidate()->clear_episodes();
  if (outcome.champion.has_value()) {
    *decision.mutable_champion() = *outcome.champion;
    decision.mutable_champion()->clear_episodes();
  }
  if (outcome.comparison.has_value()) *decision.mutable_comparison() = *outcome.comparison;
  decision.set_reason(outcome.reason);
  return decision;
}

}  // namespace roboloop::eval
