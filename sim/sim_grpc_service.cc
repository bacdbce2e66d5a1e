#include "sim/sim_grpc_service.h"

#include <utility>

#include "common/grpc_server_cancellation.h"
#include "common/grpc_status.h"

namespace roboloop::sim {

SimGrpcService::SimGrpcService(const SimServiceHandler* handler, Options options)
    : handler_(handler), options_(options) {}

grpc::Status SimGrpcService::ListTasks(grpc::ServerContext*, const v1::ListTasksRequest*,
                                       v1::ListTasksResponse* response) {
  absl::StatusOr<v1::ListTasksResponse> tasks = handler_->ListTasks();
  if (!tasks.ok()) return common::AbslToGrpc(tasks.status());
  *response = *std::move(tasks);
  return grpc::Status::OK;
}

absl::Status SimGrpcService::RunCancellable(
    grpc::ServerContext* context, const std::function<absl::Status(common::CancellationToken*)>& work) const {
  // The engine checks the token every env step, so a cancelled call stops between steps.
  common::CancellationToken cancel;
  const common::ServerCallCancellationWatch watch =
      common::WatchServerCallCancellation(context, &cancel, options_.cancel_poll);
  return work(&cancel);
}

grpc::Status SimGrpcService::Rollout(grpc::ServerContext* context, const v1::RolloutRequest* request,
                                     grpc::ServerWriter<v1::EpisodeRecord>* writer) {
  return common::AbslToGrpc(RunCancellable(context, [&](common::CancellationToken* cancel) {
    auto write = [&](const v1::EpisodeRecord& record) -> absl::Status {
      if (!writer->Write(record)) {
        cancel->Cancel("the client closed the stream");
        return absl::CancelledError("the client closed the Rollout stream");
      }
      return absl::OkStatus();
    };
    return handler_->Rollout(*request, write, cancel);
  }));
}

grpc::Status SimGrpcService::Collect(grpc::ServerContext* context, const v1::CollectRequest* request,
                                     v1::DatasetWritten* response) {
  return common::AbslToGrpc(RunCancellable(context, [&](common::CancellationToken* cancel) {
    absl::StatusOr<v1::DatasetWritten> written = handler_->Collect(*request, cancel);
    if (written.ok()) *response = *std::move(written);
    return written.status();
  }));
}

grpc::Status SimGrpcService::Relabel(grpc::ServerContext*, const v1::RelabelRequest* request,
                                     v1::DatasetWritten* response) {
  absl::StatusOr<v1::DatasetWritten> written = handler_->Relabel(*request);
  if (!written.ok()) return common::AbslToGrpc(written.status());
  *response = *std::move(written);
  return grpc::Status::OK;
}

}  // namespace roboloop::sim
