// What each stage kind does (issue 8, req 1 and 5), through the services' gRPC clients:
// collect and relabel run on SimService (which registers the datasets it writes), merge runs
// here over registry copies, train streams TrainService (Cancel on cancellation), evaluate,
// compare and promote run on EvalService, report writes an HTML page from the registry and the
// leaderboard. Every output that names an artifact is its registry id, so the run store's
// cache keys (which hold the substituted parameters) are content keys.
#pragma once

#include <string>

#include "pipeline/run_store.h"
#include "pipeline/scheduler.h"
#include "pipeline/services.h"
#include "sim/task_registry.h"

namespace roboloop::pipeline {

// Settings of a ServiceStageExecutor.
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

// Thread-safe: stages run concurrently, each on its own calls.
class ServiceStageExecutor : public StageExecutor {
 public:
  // Uses `clients` (not owned; must outlive the executor).
  ServiceStageExecutor(ServiceClients* clients, ExecutorOptions options)
      : clients_(clients), options_(std::move(options)) {}

  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) override;

 private:
  absl::StatusOr<StageOutputs> Collect(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Relabel(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Merge(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Train(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Evaluate(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Compare(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Promote(const v1::Stage& stage, const StageContext& context);
  absl::StatusOr<StageOutputs> Report(const v1::Stage& stage, const StageContext& context);

  // Runs `checkpoint` under `protocol` on EvalService, reporting episodes as progress.
  absl::StatusOr<v1::Evaluation> EvaluateOnService(const std::string& checkpoint, const std::string& protocol,
                                                   bool force, const StageContext& context);
  // Registers the failed episodes of `evaluation` (rolled out again with its checkpoint, which
  // is deterministic) as a dataset; "" when every episode succeeded.
  absl::StatusOr<std::string> RegisterFailures(const v1::Evaluation& evaluation, const std::string& name,
                                               const StageContext& context);
  // A local copy of registry dataset `ref`.
  absl::StatusOr<std::string> LocalDataset(const std::string& ref);
  // "<pipeline>-<stage>" for a stage label ("loop[2].stage" counts as "stage").
  std::string DefaultName(const std::string& label) const;
  // The path, relative to the sim service's dataset folder, a stage's dataset is written to.
  std::string ServerDatasetPath(const StageContext& context, const std::string& suffix) const;

  ServiceClients* clients_;
  ExecutorOptions options_;
};

}  // namespace roboloop::pipeline
