// The gRPC adapter of SimService: translates calls into SimServiceHandler calls and turns a
// cancelled stream (client TryCancel, deadline, disconnect) into a stopped rollout.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>

#include "common/cancellation.h"
#include "absl/time/time.h"
#include "roboloop/v1/sim.grpc.pb.h"
#include "sim/sim_service.h"

namespace roboloop::sim {

// Thread-safe: gRPC calls handlers concurrently; the handler is thread-safe.
class SimGrpcService final : public v1::SimService::Service {
 public:
  // Options of the adapter.
  struct Options {
    absl::Duration cancel_poll = absl::Milliseconds(10);  // how often a rollout checks for cancellation
  };

  // Serves `handler` (not owned; must outlive the service).
  SimGrpcService(const SimServiceHandler* handler, Options options);

  grpc::Status ListTasks(grpc::ServerContext* context, const v1::ListTasksRequest* request,
                         v1::ListTasksResponse* response) override;
  grpc::Status Rollout(grpc::ServerContext* context, const v1::RolloutRequest* request,
                       grpc::ServerWriter<v1::EpisodeRecord>* writer) override;
  grpc::Status Collect(grpc::ServerContext* context, const v1::CollectRequest* request,
                       v1::DatasetWritten* response) override;
  grpc::Status Relabel(grpc::ServerContext* context, const v1::RelabelRequest* request,
                       v1::DatasetWritten* response) override;

 private:
  // Runs `work(&cancel)` while a watcher raises `cancel` once `context` is cancelled.
  absl::Status RunCancellable(grpc::ServerContext* context,
                              const std::function<absl::Status(common::CancellationToken*)>& work) const;

  const SimServiceHandler* handler_;
  Options options_;
};

}  // namespace roboloop::sim
