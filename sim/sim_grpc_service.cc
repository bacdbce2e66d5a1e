#include "sim/sim_grpc_service.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/grpc_auth.h"
#include "common/grpc_status.h"

namespace roboloop::sim {

SimGrpcService::SimGrpcService(const SimServiceHandler* handler, Options options)
    : handler_(handler), options_(options) {}

grpc::Status SimGrpcService::ListTasks(grpc::ServerContext* context, const v1::ListTasksRequest*,
                                       v1::ListTasksResponse* response) {
  grpc::Status auth = common::CheckCallAuthenticated(*context);
  if (!auth.ok()) return auth;
  absl::StatusOr<v1::ListTasksResponse> tasks = handler_->ListTasks();
  if (!tasks.ok()) return common::AbslToGrpc(tasks.status());
  *response = *std::move(tasks);
  return grpc::Status::OK;
}

grpc::Status SimGrpcService::Rollout(grpc::ServerContext* context, const v1::RolloutRequest* request,
                                     grpc::ServerWriter<v1::EpisodeRecord>* writer) {
  grpc::Status auth = common::CheckCallAuthenticated(*context);
  if (!auth.ok()) return auth;
  // The sync API has no cancellation callback: a watcher polls the context and raises the
  // flag the engine checks every env step, so a cancelled stream stops between steps.
  std::atomic<bool> cancel{false};
  absl::Notification finished;
  std::thread watcher([&] {
    while (!finished.WaitForNotificationWithTimeout(options_.cancel_poll)) {
      if (context->IsCancelled()) {
        cancel.store(true);
        return;
      }
    }
  });
  auto write = [&](const v1::EpisodeRecord& record) -> absl::Status {
    if (!writer->Write(record)) {
      cancel.store(true);
      return absl::CancelledError("the client closed the Rollout stream");
    }
    return absl::OkStatus();
  };
  absl::Status status = handler_->Rollout(*request, write, &cancel);
  finished.Notify();
  watcher.join();
  return common::AbslToGrpc(status);
}

}  // namespace roboloop::sim
