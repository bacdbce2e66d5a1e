#include "sim/sim_client.h"

#include "common/status.h"

namespace roboloop::sim {

absl::StatusOr<std::unique_ptr<SimClient>> SimClient::Connect(
    const common::GrpcChannelOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto channel, common::GrpcChannel::Create(options));
  return std::unique_ptr<SimClient>(new SimClient(std::move(channel)));
}

SimClient::SimClient(std::unique_ptr<common::GrpcChannel> channel)
    : channel_(std::move(channel)), stub_(v1::SimService::NewStub(channel_->channel())) {}

absl::StatusOr<v1::ListTasksResponse> SimClient::ListTasks() const {
  auto context = channel_->NewContext();
  v1::ListTasksResponse response;
  ROBOLOOP_RETURN_IF_ERROR(
      channel_->CallStatus(stub_->ListTasks(context.get(), v1::ListTasksRequest(), &response),
                           "ListTasks"));
  return response;
}

absl::Status SimClient::Rollout(const v1::RolloutRequest& request, const EpisodeCallback& on_episode,
                                absl::Duration deadline) const {
  auto context = channel_->NewContext(deadline);
  auto reader = stub_->Rollout(context.get(), request);
  v1::EpisodeRecord record;
  absl::Status callback_status;
  while (reader->Read(&record)) {
    callback_status = on_episode(record);
    if (!callback_status.ok()) {
      context->TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (!callback_status.ok()) return callback_status;
  return channel_->CallStatus(status, "Rollout");
}

absl::StatusOr<v1::DatasetWritten> SimClient::Collect(const v1::CollectRequest& request,
                                                      absl::Duration deadline,
                                                      const common::CancellationToken* cancel) const {
  auto context = channel_->NewContext(deadline);
  common::CancellationCallback canceller = common::CancelCallOnCancel(context.get(), cancel);
  v1::DatasetWritten response;
  ROBOLOOP_RETURN_IF_ERROR(
      channel_->CallStatus(stub_->Collect(context.get(), request, &response), "Collect"));
  return response;
}

absl::StatusOr<v1::DatasetWritten> SimClient::Relabel(const v1::RelabelRequest& request,
                                                      absl::Duration deadline,
                                                      const common::CancellationToken* cancel) const {
  auto context = channel_->NewContext(deadline);
  common::CancellationCallback canceller = common::CancelCallOnCancel(context.get(), cancel);
  v1::DatasetWritten response;
  ROBOLOOP_RETURN_IF_ERROR(
      channel_->CallStatus(stub_->Relabel(context.get(), request, &response), "Relabel"));
  return response;
}

}  // namespace roboloop::sim
