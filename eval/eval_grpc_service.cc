#include "eval/eval_grpc_service.h"

#include "common/grpc_caller.h"
#include "common/grpc_server_cancellation.h"
#include "common/grpc_status.h"
#include "eval/promotion.h"

namespace roboloop::eval {

EvalGrpcService::EvalGrpcService(const EvalServiceHandler* handler, Options options)
    : handler_(handler), options_(options) {}

grpc::Status EvalGrpcService::Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                                       grpc::ServerWriter<v1::EvaluateProgress>* writer) {
  // The sharded rollout checks the token per episode.
  common::CancellationToken cancel;
  const common::ServerCallCancellationWatch watch =
      common::WatchServerCallCancellation(context, &cancel, options_.cancel_poll);
  auto write = [&](const v1::EvaluateProgress& progress) -> absl::Status {
    if (writer->Write(progress)) return absl::OkStatus();
    cancel.Cancel("the call was cancelled");
    return absl::CancelledError("the client closed the Evaluate stream");
  };
  absl::StatusOr<v1::Evaluation> evaluation = handler_->Evaluate(*request, common::RequestingUser(*context), write, &cancel);
  if (!evaluation.ok()) return common::AbslToGrpc(evaluation.status());
  v1::EvaluateProgress last;
  last.set_episodes_total(evaluation->protocol().episodes());
  last.set_episodes_done(evaluation->episodes_size());
  last.set_successes(evaluation->aggregates().success().successes());
  *last.mutable_evaluation() = *std::move(evaluation);
  writer->Write(last);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::Leaderboard(grpc::ServerContext*, const v1::LeaderboardRequest* request,
                                          v1::LeaderboardResponse* response) {
  absl::StatusOr<v1::LeaderboardResponse> top = handler_->Leaderboard(*request);
  if (!top.ok()) return common::AbslToGrpc(top.status());
  *response = *std::move(top);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::Compare(grpc::ServerContext*, const v1::CompareRequest* request,
                                      v1::Comparison* response) {
  absl::StatusOr<v1::Comparison> comparison = handler_->Compare(*request);
  if (!comparison.ok()) return common::AbslToGrpc(comparison.status());
  *response = *std::move(comparison);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::Promote(grpc::ServerContext* context, const v1::PromoteCandidateRequest* request,
                                      v1::PromotionDecision* response) {
  if (request->protocol_source_case() == v1::PromoteCandidateRequest::kProtocolName) {
    const absl::Status name = CheckServedProtocolName(request->protocol_name());
    if (!name.ok()) return common::AbslToGrpc(name);
  }
  if (options_.registry == nullptr) {
    return common::AbslToGrpc(absl::FailedPreconditionError("this EvalService has no registry to promote in"));
  }
  absl::StatusOr<PromotionRequest> promotion =
      PromotionRequestFrom(*request, handler_->protocols_dir(), options_.dataset_cache_dir);
  if (!promotion.ok()) return common::AbslToGrpc(promotion.status());
  promotion->requested_by = common::RequestingUser(*context);
  absl::StatusOr<PromotionOutcome> outcome = PromoteIfBetter(*handler_, *options_.registry, *promotion);
  if (!outcome.ok()) return common::AbslToGrpc(outcome.status());
  *response = PromotionDecisionOf(*outcome);
  return grpc::Status::OK;
}

grpc::Status EvalGrpcService::GetProtocol(grpc::ServerContext*, const v1::GetProtocolRequest* request,
                                          v1::ProtocolInfo* response) {
  absl::StatusOr<v1::ProtocolInfo> info = handler_->GetProtocol(request->protocol_name());
  if (!info.ok()) return common::AbslToGrpc(info.status());
  *response = *std::move(info);
  return grpc::Status::OK;
}

}  // namespace roboloop::eval
