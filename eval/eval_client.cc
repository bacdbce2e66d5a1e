#include "eval/eval_client.h"

#include <optional>

#include "common/status.h"

namespace roboloop::eval {

absl::StatusOr<std::unique_ptr<EvalClient>> EvalClient::Connect(const common::GrpcChannelOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto channel, common::GrpcChannel::Create(options));
  return std::unique_ptr<EvalClient>(new EvalClient(std::move(channel)));
}

EvalClient::EvalClient(std::unique_ptr<common::GrpcChannel> channel)
    : channel_(std::move(channel)), stub_(v1::EvalService::NewStub(channel_->channel())) {}

absl::StatusOr<v1::Evaluation> EvalClient::Evaluate(const v1::EvaluateRequest& request,
                                                    const EvaluateProgressCallback& on_progress,
                                                    absl::Duration deadline) const {
  auto context = channel_->NewContext(deadline);
  auto reader = stub_->Evaluate(context.get(), request);
  v1::EvaluateProgress progress;
  absl::Status callback_status;
  std::optional<v1::Evaluation> evaluation;
  while (reader->Read(&progress)) {
    if (progress.has_evaluation()) {
      evaluation = progress.evaluation();
      continue;
    }
    if (on_progress) callback_status = on_progress(progress);
    if (!callback_status.ok()) {
      context->TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (!callback_status.ok()) return callback_status;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(status, "Evaluate"));
  if (!evaluation.has_value()) return absl::InternalError("Evaluate ended without an evaluation");
  return *std::move(evaluation);
}

absl::StatusOr<v1::LeaderboardResponse> EvalClient::Leaderboard(const v1::LeaderboardRequest& request) const {
  auto context = channel_->NewContext();
  v1::LeaderboardResponse response;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(stub_->Leaderboard(context.get(), request, &response), "Leaderboard"));
  return response;
}

absl::StatusOr<v1::Comparison> EvalClient::Compare(const v1::CompareRequest& request) const {
  auto context = channel_->NewContext();
  v1::Comparison response;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(stub_->Compare(context.get(), request, &response), "Compare"));
  return response;
}

absl::StatusOr<v1::ProtocolInfo> EvalClient::GetProtocol(const std::string& name) const {
  auto context = channel_->NewContext();
  v1::GetProtocolRequest request;
  request.set_protocol_name(name);
  v1::ProtocolInfo response;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(stub_->GetProtocol(context.get(), request, &response), "GetProtocol"));
  return response;
}

absl::StatusOr<v1::PromotionDecision> EvalClient::Promote(const v1::PromoteCandidateRequest& request,
                                                         absl::Duration deadline,
                                                         const common::CancellationToken* cancel) const {
  auto context = channel_->NewContext(deadline);
  common::CancellationCallback canceller = common::CancelCallOnCancel(context.get(), cancel);
  v1::PromotionDecision response;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(stub_->Promote(context.get(), request, &response), "Promote"));
  return response;
}

}  // namespace roboloop::eval
