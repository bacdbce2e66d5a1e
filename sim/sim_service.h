// The transport-free logic of SimService (issue 4, req 9; docs/architecture.md §3): lists tasks and
// runs rollouts, passing each finished episode to a callback. The gRPC adapter
// (sim/sim_grpc_service.h) and the CLI both drive it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cancellation.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/validation_in_child.h"
#include "registry/registry_client.h"
#include "roboloop/v1/sim.pb.h"
#include "sim/robustness.h"
#include "sim/rollout.h"
#include "sim/task_registry.h"

namespace roboloop::sim {

// Receives one finished episode; an error stops the rollout and is returned by Rollout.
using EpisodeCallback = std::function<absl::Status(const v1::EpisodeRecord& record)>;

// Thread-safe: ListTasks and Rollout may run concurrently (each rollout builds its own task
// and envs; the registry is thread-safe).
class SimServiceHandler {
 public:
  // Options of the handler.
  struct Options {
    const TaskRegistry* registry = nullptr;  // tasks served (not owned; must outlive the handler)
    int max_envs = 4096;                     // largest `envs` a request may ask for
    int max_threads = 64;                    // largest `threads` a request may ask for
    std::string dataset_dir = "";            // Collect/Relabel paths live under it; empty = as given
    // Serves checkpoint references and registers/fetches datasets (not owned; thread-safe; must
    // outlive the handler); null = none.
    registry::RegistryClient* checkpoints = nullptr;
    std::string checkpoint_cache_dir = "";   // local copies of policy blobs; required with checkpoints
    std::string dataset_cache_dir = "";      // local copies of registry datasets; "" = <checkpoint_cache_dir>/datasets
    // Checks Relabel's input file before the handler reads it (data::ProgramFileScreen: a file that crashes or
    // hangs libhdf5 is then an error for that request, not a crashed server); null = not checked.
    data::FileScreen screen_dataset = nullptr;
  };

  // InvalidArgument when the registry is missing or a limit is below 1.
  static absl::StatusOr<std::unique_ptr<SimServiceHandler>> Create(const Options& options);

  // Every registered task, sorted by name, and the server's libraries (mujoco; libtorch and
  // blas when it serves checkpoints, which loads the torch library). An error names a task
  // that fails to build.
  absl::StatusOr<v1::ListTasksResponse> ListTasks() const;

  // Validates `request` (task name, policy, seed range, envs, threads, robustness) before any
  // stepping, then runs it and calls `on_episode` for each finished episode in completion
  // order, on the calling thread. When `cancel` (may be null) is cancelled, the rollout stops
  // within one env step and Rollout returns Cancelled. A policy other than "expert" or
  // "random" is a checkpoint reference (sim/checkpoint_policy.h), checked against the task
  // before stepping; FailedPrecondition when the handler has no registry.
  absl::Status Rollout(const v1::RolloutRequest& request, const EpisodeCallback& on_episode,
                       const common::CancellationToken* cancel) const;

  // Validates `request` like Rollout, then writes its episodes as a dataset (sim/collect.h) at
  // output_path (resolved under options.dataset_dir when set; a path escaping it is
  // InvalidArgument), keeping only successes or only failures when asked; with register_as it
  // registers the file (uploaded to the registry) and names the dataset in the answer.
  // Cancelled as Rollout is.
  absl::StatusOr<v1::DatasetWritten> Collect(const v1::CollectRequest& request,
                                             const common::CancellationToken* cancel) const;

  // Relabels input_path with the expert of `request.task` (or of the input's env_args task)
  // into output_path (sim/collect.h RelabelDataset); paths resolve as for Collect; input_ref
  // reads a registry dataset instead, register_as registers the result. A policy other than
  // "expert" is Unimplemented.
  absl::StatusOr<v1::DatasetWritten> Relabel(const v1::RelabelRequest& request) const;

  // Rollouts running right now (for monitoring and for tests of cancellation).
  int active_rollouts() const { return active_rollouts_.load(); }

 private:
  explicit SimServiceHandler(const Options& options) : options_(options) {}
  absl::StatusOr<RolloutOptions> ValidatedRolloutOptions(const v1::RolloutRequest& request,
                                                         const Task& task,
                                                         const common::CancellationToken* cancel) const;
  absl::StatusOr<std::string> ResolveDatasetPath(const std::string& path) const;
  // Uploads `path` and registers it as dataset `name`; fills written's dataset_id and ref.
  absl::Status RegisterWritten(const std::string& path, const std::string& name,
                               const std::vector<std::string>& parents, const std::string& metadata_json,
                               v1::DatasetWritten* written) const;
  // A local copy of registry dataset `ref` (cached by content).
  absl::StatusOr<std::string> FetchDataset(const std::string& ref) const;
  absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const v1::RolloutRequest& request,
                                                     const Task& task) const;

  Options options_;
  mutable std::atomic<int> active_rollouts_{0};
};

// The policy a request names: "expert" (the task's), "random" (seeded by `seed`);
// InvalidArgument when empty, FailedPrecondition for any other reference (named): checkpoints
// need a registry (SimServiceHandler::Options::checkpoints).
absl::StatusOr<std::unique_ptr<Policy>> MakeNamedPolicy(const std::string& reference,
                                                        uint64_t seed, const Task& task);

// True for a policy that names a registry checkpoint: neither empty, "expert" nor "random".
bool IsCheckpointReference(const std::string& policy);

// Converts a request's robustness message; an unset range (0, 0) means unchanged.
RobustnessOptions RobustnessFromProto(const v1::RobustnessOptions& proto);

// The wire form of a record, with `trajectory` attached when not null.
v1::EpisodeRecord EpisodeRecordToProto(const EpisodeRecord& record, const Trajectory* trajectory);

// A record back from the wire form; InvalidArgument for an unknown end reason.
absl::StatusOr<EpisodeRecord> EpisodeRecordFromProto(const v1::EpisodeRecord& proto);

}  // namespace roboloop::sim
