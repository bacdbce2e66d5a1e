#include "pipeline/runner.h"

#include <algorithm>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "pipeline/run_store.h"
#include "pipeline/spec.h"
#include "pipeline/stage_executor.h"
#include "pipeline/stage_kinds/builtin.h"
#include "wiring/services.h"
#include "wiring/tasks.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<LoadedPipeline> LoadWithOverrides(const std::string& file, const std::vector<std::string>& sets) {
  std::vector<Override> overrides;
  for (const std::string& set : sets) {
    ROBOLOOP_ASSIGN_OR_RETURN(Override o, ParseOverride(set));
    overrides.push_back(o);
  }
  return LoadPipeline(file, overrides);
}

// `stage` with the run's references and variables substituted where they have values.
v1::Stage Resolved(const v1::Stage& stage, const LoadedPipeline& loaded, const RunOutcome& outcome) {
  const std::map<std::string, std::string> vars(loaded.pipeline.vars().begin(), loaded.pipeline.vars().end());
  v1::Stage resolved = stage;
  (void)VisitStageStrings(&resolved, [&](std::string* text) {
    absl::StatusOr<std::string> substituted = Substitute(*text, outcome.outputs, vars);
    if (substituted.ok()) *text = *std::move(substituted);
    return absl::OkStatus();
  });
  return resolved;
}

// What the kinds of a loop's body stages say of each iteration, the stages named
// "<loop>[<i>].<stage>".
void SummarizeLoopBody(StageServices& services, const Plan& plan, const v1::Stage& loop, const RunOutcome& outcome,
                       std::vector<std::string>* lines) {
  auto bodies = outcome.loop_bodies.find(loop.name());
  if (bodies == outcome.loop_bodies.end()) return;
  for (size_t i = 0; i < bodies->second.size(); ++i) {
    for (const v1::Stage& stage : loop.loop().stages()) {
      auto it = bodies->second[i].find(stage.name());
      const StageKind* kind = plan.kinds->Find(stage.kind());
      if (it == bodies->second[i].end() || !kind->summarize) continue;
      v1::Stage labelled = stage;
      labelled.set_name(absl::StrCat(loop.name(), "[", i + 1, "].", stage.name()));
      for (std::string& line : kind->summarize(labelled, it->second, services)) lines->push_back(std::move(line));
    }
  }
}

// Loop iterations and what each finished stage's kind has to say of it, in pipeline order
// (a loop's body stages per iteration).
std::vector<std::string> Summary(StageServices& services, const Plan& plan, const LoadedPipeline& loaded,
                                 const RunOutcome& outcome) {
  std::vector<std::string> lines;
  for (const auto& [loop, iterations] : outcome.loop_iterations) lines.push_back(absl::StrCat(loop, ": ", iterations, " iteration(s)"));
  for (const v1::Stage& stage : loaded.pipeline.stages()) {
    if (stage.has_loop()) SummarizeLoopBody(services, plan, stage, outcome, &lines);
    auto it = outcome.outputs.find(stage.name());
    const StageKind* kind = plan.kinds->Find(stage.kind());
    if (it == outcome.outputs.end() || !kind->summarize) continue;
    for (std::string& line : kind->summarize(Resolved(stage, loaded, outcome), it->second, services)) {
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

// The run-store status of a run that ended with `status`.
std::string EndState(const absl::Status& status, const common::CancellationToken* cancel) {
  if (status.ok()) return "finished";
  return common::IsCancelled(cancel) || absl::IsCancelled(status) ? "cancelled" : "failed";
}

// The run's id: a new run in `store`, or the reopened run `options.resume`.
absl::StatusOr<std::string> StartOrReopenRun(RunStore& store, const LoadedPipeline& loaded,
                                             const PipelineRunOptions& options) {
  if (options.resume.empty()) return store.CreateRun(loaded.pipeline.name(), options.file, options.overrides);
  ROBOLOOP_RETURN_IF_ERROR(store.ReopenRun(options.resume));
  return options.resume;
}

// Where the stages of run `run_id` keep their files under the store, and how many sim threads they use.
ExecutorOptions ExecutorOptionsFor(const StoreLayout& layout, const LoadedPipeline& loaded, const std::string& run_id) {
  ExecutorOptions executor_options;
  executor_options.pipeline = loaded.pipeline.name();
  executor_options.run_id = run_id;
  executor_options.run_dir = layout.PipelineRunDir(run_id);
  executor_options.cache_dir = layout.DatasetCache();
  executor_options.policy_cache_dir = layout.PolicyCache();
  executor_options.sim_threads = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  return executor_options;
}

}  // namespace

absl::StatusOr<PipelineRunResult> RunPipelineFile(const PipelineRunOptions& options) {
  const StoreLayout layout(options.root);
  const StageKindRegistry& kinds = options.kinds != nullptr ? *options.kinds : BuiltinStageKinds();
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, RunStore::Open(layout.PipelineRuns()));
  ROBOLOOP_ASSIGN_OR_RETURN(LoadedPipeline loaded, LoadWithOverrides(options.file, options.overrides));
  ValidationOptions validation;
  validation.protocols_dir = options.protocols_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(Plan plan, ValidatePipeline(loaded, kinds, validation));

  std::unique_ptr<wiring::EmbeddedServices> embedded;
  wiring::EmbeddedOptions embedded_options;
  embedded_options.root = options.root;
  embedded_options.protocols_dir = options.protocols_dir;
  embedded_options.task_files = TaskFiles(loaded);
  embedded_options.dataset_checker = options.dataset_checker;
  ROBOLOOP_ASSIGN_OR_RETURN(wiring::ServiceTargets targets,
                            wiring::StartOrLoadServices(options.services_file, embedded_options, &embedded));
  ROBOLOOP_ASSIGN_OR_RETURN(auto clients, wiring::ServiceClients::Connect(targets));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::TaskRegistry> tasks, wiring::TaskRegistryWith({}, TaskFiles(loaded)));

  PipelineRunResult result;
  result.pipeline = loaded.pipeline.name();
  ROBOLOOP_ASSIGN_OR_RETURN(result.run_id, StartOrReopenRun(*store, loaded, options));
  ExecutorOptions executor_options = ExecutorOptionsFor(layout, loaded, result.run_id);
  executor_options.tasks = tasks.get();
  if (targets.embedded) executor_options.train_root = options.root;
  const std::string log_dir = JoinPath(executor_options.run_dir, "logs");
  ServiceStageExecutor services_executor(clients.get(), executor_options);
  RecordingExecutor executor(&services_executor, store.get(), result.run_id, options.use_cache, log_dir);

  SchedulerOptions scheduler;
  scheduler.threads = options.threads;
  scheduler.cancel = options.cancel;
  if (options.on_start) {
    scheduler.observer = options.on_start(StartedRun{result.run_id, loaded.pipeline.name(), targets.embedded, log_dir});
  }
  absl::StatusOr<RunOutcome> outcome = RunPipeline(loaded, plan, executor, scheduler);
  result.status = outcome.status();
  ROBOLOOP_RETURN_IF_ERROR(store->FinishRun(result.run_id, EndState(result.status, options.cancel),
                                            std::string(result.status.message())));
  if (outcome.ok()) {
    result.outcome = *std::move(outcome);
    result.summary = Summary(services_executor.services(), plan, loaded, result.outcome);
  }
  return result;
}

}  // namespace roboloop::pipeline
