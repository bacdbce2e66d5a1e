// Where sim commands run (issue 27, req 3): in this process (a SimService handler over a local
// task registry, with the registry opened for checkpoint policies) or on a remote SimService
// through its client — the same calls either way. Used by `roboloop sim …`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "sim/sim_client.h"
#include "sim/sim_service.h"
#include "sim/task_registry.h"
#include "wiring/registry_connection.h"

namespace roboloop::wiring {

// What a sim backend is built from.
struct SimBackendOptions {
  std::string sim;                        // remote SimService; "" = in this process
  std::string sim_token_file;             // its bearer token
  std::vector<std::string> task_plugins;  // in-process: shared libraries adding tasks
  std::vector<std::string> yaml_tasks;    // in-process: declarative task files
  RegistryTarget registry;                // in-process: where checkpoint policies resolve
};

// One backend per command. Not thread-safe.
class SimBackend {
 public:
  // Opens the backend; `policy` is the policy the command runs (a checkpoint reference opens
  // the registry in-process).
  static absl::StatusOr<std::unique_ptr<SimBackend>> Open(const SimBackendOptions& options,
                                                          const std::string& policy = "");

  absl::StatusOr<v1::ListTasksResponse> ListTasks() const;
  absl::Status Rollout(const v1::RolloutRequest& request, const sim::EpisodeCallback& on_episode) const;
  // Writes the request's dataset; once `cancel` (may be null) is cancelled the rollout stops,
  // no file is left and the answer is Cancelled.
  absl::StatusOr<v1::DatasetWritten> Collect(const v1::CollectRequest& request,
                                             const common::CancellationToken* cancel = nullptr) const;
  absl::StatusOr<v1::DatasetWritten> Relabel(const v1::RelabelRequest& request) const;

 private:
  SimBackend() = default;
  std::unique_ptr<RegistryConnection> registry_;
  std::unique_ptr<sim::TaskRegistry> tasks_;
  std::unique_ptr<sim::SimServiceHandler> handler_;
  std::unique_ptr<sim::SimClient> client_;
};

}  // namespace roboloop::wiring
