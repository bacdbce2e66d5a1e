// The client of SimService: lists tasks and runs rollouts on a sim server, streaming episode
// records to a callback.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "common/grpc_client.h"
#include "roboloop/v1/sim.grpc.pb.h"
#include "sim/sim_service.h"

namespace roboloop::sim {

// Thread-safe: calls may run concurrently (each uses its own context).
class SimClient {
 public:
  // Creates a channel to `options.target` (validated by GrpcChannel::Create).
  static absl::StatusOr<std::unique_ptr<SimClient>> Connect(const common::GrpcChannelOptions& options);

  // The server's tasks.
  absl::StatusOr<v1::ListTasksResponse> ListTasks() const;

  // Runs `request` on the server with `deadline` and calls `on_episode` for each record as it
  // arrives. When `on_episode` returns an error the call is cancelled (the server stops the
  // rollout) and that error is returned. Server errors keep their code and name the target.
  absl::Status Rollout(const v1::RolloutRequest& request, const EpisodeCallback& on_episode,
                       absl::Duration deadline = absl::Hours(24)) const;

  // Runs Collect on the server (the dataset is written on the server's filesystem); raising
  // cancelling `cancel` (may be null) cancels the call, which stops the rollout and leaves no file.
  absl::StatusOr<v1::DatasetWritten> Collect(const v1::CollectRequest& request,
                                             absl::Duration deadline = absl::Hours(24),
                                             const common::CancellationToken* cancel = nullptr) const;

  // Runs Relabel on the server (both paths are on the server's filesystem); `cancel` as Collect.
  absl::StatusOr<v1::DatasetWritten> Relabel(const v1::RelabelRequest& request,
                                             absl::Duration deadline = absl::Hours(24),
                                             const common::CancellationToken* cancel = nullptr) const;

 private:
  explicit SimClient(std::unique_ptr<common::GrpcChannel> channel);

  std::unique_ptr<common::GrpcChannel> channel_;
  std::unique_ptr<v1::SimService::Stub> stub_;
};

}  // namespace roboloop::sim
