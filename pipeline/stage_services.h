// What running stages may use (issue 27, req 1): the services' gRPC clients, the run's settings
// and the steps several built-in kinds share (evaluating on EvalService, registering failed
// episodes, local copies of registry datasets, default registry names). A kind's run function
// receives one (StageKind::run).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "pipeline/stage_kind.h"
#include "roboloop/v1/eval.pb.h"
#include "roboloop/v1/sim.pb.h"
#include "sim/task_registry.h"
#include "wiring/services.h"

namespace roboloop::pipeline {

// Settings of the stages of one run.
struct ExecutorOptions {
  std::string pipeline;   // pipeline name: default registry names are "<pipeline>-<stage>"
  std::string run_id;     // datasets the sim service writes go to pipeline/<run_id>/ under its dataset folder
  std::string run_dir;    // local folder of the run: merged datasets, reports, stage logs
  std::string cache_dir;  // local copies of registry datasets (for merge)
  std::string policy_cache_dir;  // local copies of policy blobs (report animations)
  int sim_threads = 2;    // physics threads of collections
  std::string train_root;              // reports: where training logs are ("" = no loss curves)
  const sim::TaskRegistry* tasks = nullptr;  // reports: tasks to animate episodes of (null = none)
};

// A collection of `count` episodes from `first` of `task` with `policy`, 8 envs.
v1::CollectRequest CollectRequestFor(const std::string& task, const std::string& policy, uint64_t base_seed,
                                     int64_t first, int64_t count, int max_steps, int threads);

// Thread-safe: stages run concurrently, each on its own calls.
class StageServices {
 public:
  // Uses `clients` (not owned; must outlive this; may be null for kinds that call no service).
  StageServices(wiring::ServiceClients* clients, ExecutorOptions options)
      : clients_(clients), options_(std::move(options)) {}

  // The services' clients. Precondition: constructed with clients.
  wiring::ServiceClients& clients() { return *clients_; }
  const ExecutorOptions& options() const { return options_; }

  // "<pipeline>-<stage>" for a stage label ("loop[2].stage" counts as "stage").
  std::string DefaultName(const std::string& label) const;
  // The path, relative to the sim service's dataset folder, a stage's dataset is written to.
  std::string ServerDatasetPath(const StageContext& context, const std::string& suffix) const;
  // A local copy of registry dataset `ref`.
  absl::StatusOr<std::string> LocalDataset(const std::string& ref);
  // Runs `checkpoint` under `protocol` on EvalService, reporting episodes as progress.
  absl::StatusOr<v1::Evaluation> EvaluateOnService(const std::string& checkpoint, const std::string& protocol,
                                                   bool force, const StageContext& context);
  // The hash the eval service reports for protocol `name` (GetProtocol; its errors as they come).
  // An eval service older than that RPC reports none: "" then, and a note on stderr (once) says
  // that stages naming protocols are cached by the name only.
  absl::StatusOr<std::string> ServedProtocolHash(const std::string& name);
  // Registers the failed episodes of `evaluation` (rolled out again with its checkpoint, which
  // is deterministic) as a dataset; "" when every episode succeeded.
  absl::StatusOr<std::string> RegisterFailures(const v1::Evaluation& evaluation, const std::string& name,
                                               const StageContext& context);

 private:
  wiring::ServiceClients* clients_;
  ExecutorOptions options_;
  std::atomic<bool> noted_unhashed_protocols_{false};
};

}  // namespace roboloop::pipeline
