// Promotion of the champion (issue 7, req 5): the protected alias `champion` of a model moves
// to a candidate only when the paired comparison against the current champion under one
// protocol says `better` (or there is no champion), on a protocol whose seeds are disjoint
// from the seeds of the candidate's training data. The evaluation ids and the verdict are the
// alias move's reason in the registry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "eval/eval_service.h"
#include "registry/registry_client.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::eval {

// The alias promotion moves.
inline constexpr char kChampionAlias[] = "champion";

// What to promote.
struct PromotionRequest {
  std::string model;                       // registry model whose champion may move
  v1::Protocol protocol;                   // the gate protocol (resolved)
  std::string candidate_ref;               // candidate checkpoint; empty = <model>@latest
  std::vector<std::string> sim_endpoints;  // empty = the handler's defaults
  double alpha = 0.05;                     // significance level of the paired comparison
  std::string dataset_cache_dir;           // local copies of training datasets (seed check)
  std::string requested_by;                // who asked (recorded in new evaluations)
};

// What promotion decided.
struct PromotionOutcome {
  bool promoted = false;                  // the alias moved to the candidate
  std::string candidate_id;               // candidate checkpoint id
  std::string champion_id;                // champion before the decision ("" when none)
  v1::Evaluation candidate;               // its evaluation under the protocol
  std::optional<v1::Evaluation> champion; // the champion's, when there is one
  std::optional<v1::Comparison> comparison;  // candidate vs champion
  std::string reason;                     // the alias move's reason, or why it did not move
};

// Resolves the candidate (it must belong to `model`), refuses a protocol whose seed range
// overlaps the candidate's training seeds (FailedPrecondition naming both ranges) before any
// rollout, evaluates candidate and champion through `evaluations` (cached results reused),
// compares them and moves the alias when the verdict is better or there is no champion.
absl::StatusOr<PromotionOutcome> PromoteIfBetter(const EvalServiceHandler& evaluations,
                                                 registry::RegistryClient& registry,
                                                 const PromotionRequest& request);

// The promotion `request` asks for (EvalService.Promote, `roboloop promote`): its protocol given
// inline or named (a name under `protocols_dir`, or a YAML path; errors name it), alpha 0 (unset)
// = 0.05, training datasets copied to `dataset_cache_dir` for the seed check. InvalidArgument
// for any other alpha CheckAlpha refuses, NaN included.
absl::StatusOr<PromotionRequest> PromotionRequestFrom(const v1::PromoteCandidateRequest& request,
                                                      const std::string& protocols_dir,
                                                      const std::string& dataset_cache_dir);

// `outcome` as the service's answer (evaluations without their per-episode records).
v1::PromotionDecision PromotionDecisionOf(const PromotionOutcome& outcome);

}  // namespace roboloop::eval
