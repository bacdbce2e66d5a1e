#include "wiring/sim_backend.h"

#include "common/status.h"
#include "common/store_layout.h"
#include "sim/checkpoint_policy.h"
#include "wiring/tasks.h"

namespace roboloop::wiring {

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::Open(const SimBackendOptions& options,
                                                             const std::string& policy) {
  std::unique_ptr<SimBackend> backend(new SimBackend());
  if (!options.sim.empty()) {
    common::GrpcChannelOptions channel;
    channel.target = options.sim;
    channel.token_file = options.sim_token_file;
    ROBOLOOP_ASSIGN_OR_RETURN(backend->client_, sim::SimClient::Connect(channel));
    return backend;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(backend->tasks_, TaskRegistryWith(options.task_plugins, options.yaml_tasks));
  sim::SimServiceHandler::Options handler;
  handler.registry = backend->tasks_.get();
  if (sim::IsCheckpointReference(policy)) {
    ROBOLOOP_ASSIGN_OR_RETURN(backend->registry_, RegistryConnection::Open(options.registry));
    handler.checkpoints = &backend->registry_->client();
    handler.checkpoint_cache_dir = StoreLayout(options.registry.root).PolicyCache();
  }
  ROBOLOOP_ASSIGN_OR_RETURN(backend->handler_, sim::SimServiceHandler::Create(handler));
  return backend;
}

absl::StatusOr<v1::ListTasksResponse> SimBackend::ListTasks() const {
  return client_ ? client_->ListTasks() : handler_->ListTasks();
}

absl::Status SimBackend::Rollout(const v1::RolloutRequest& request, const sim::EpisodeCallback& on_episode) const {
  return client_ ? client_->Rollout(request, on_episode) : handler_->Rollout(request, on_episode, nullptr);
}

absl::StatusOr<v1::DatasetWritten> SimBackend::Collect(const v1::CollectRequest& request,
                                                       const common::CancellationToken* cancel) const {
  return client_ ? client_->Collect(request, absl::Hours(24), cancel) : handler_->Collect(request, cancel);
}

absl::StatusOr<v1::DatasetWritten> SimBackend::Relabel(const v1::RelabelRequest& request) const {
  return client_ ? client_->Relabel(request) : handler_->Relabel(request);
}

}  // namespace roboloop::wiring
