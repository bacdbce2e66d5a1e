#include "pipeline/runner.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "eval/protocol.h"
#include "pipeline/run_store.h"
#include "pipeline/spec.h"
#include "pipeline/stage_executor.h"
#include "pipeline/stage_kinds/builtin.h"
#include "sim/yaml_task.h"
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

// The options to run with, and the pipeline text's hash the resumed run started from ("" for a
// new run or a run recorded before it was stored).
struct ResolvedRun {
  PipelineRunOptions options;
  std::string started_spec_sha256;
};

// `options` with what the resumed run was started with filled in (see PipelineRunOptions).
absl::StatusOr<ResolvedRun> Resolve(RunStore& store, const PipelineRunOptions& options) {
  ResolvedRun resolved{options, ""};
  PipelineRunOptions& o = resolved.options;
  if (!options.resume.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(RunRecord previous, store.GetRun(options.resume));
    ROBOLOOP_ASSIGN_OR_RETURN(o.file, ResumedSpecPath(options.resume, previous.spec_path, options.file));
    o.overrides = OverridesOnTop(previous.overrides, options.overrides);
    if (previous.settings.has_value()) {
      if (o.services_file.empty()) o.services_file = previous.settings->services_file;
      if (o.protocols_dir.empty()) o.protocols_dir = previous.settings->protocols_dir;
      o.use_cache = o.use_cache && previous.settings->use_cache;
      resolved.started_spec_sha256 = previous.settings->spec_sha256;
    }
  }
  if (o.protocols_dir.empty()) o.protocols_dir = eval::kDefaultProtocolsDir;
  return resolved;
}

// True when `path` (absolute) ends with the parts of `tail` (relative), its leading ".." left out.
bool EndsWithPath(const std::filesystem::path& path, const std::filesystem::path& tail) {
  std::vector<std::string> parts;
  for (const std::filesystem::path& part : tail.lexically_normal()) {
    if (part != "..") parts.push_back(part.string());
  }
  std::vector<std::string> ends;
  for (const std::filesystem::path& part : path) ends.push_back(part.string());
  return !parts.empty() && parts.size() <= ends.size() && std::equal(parts.rbegin(), parts.rend(), ends.rbegin());
}

// FailedPrecondition when the pipeline file no longer holds the text the resumed run started
// from (checked before the run's overrides, which may no longer fit it, are applied).
absl::Status CheckSpecUnchanged(const ResolvedRun& run) {
  if (run.started_spec_sha256.empty()) return absl::OkStatus();
  const std::string& file = run.options.file;
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string text, ReadFile(file));
  if (Sha256Hex(text) == run.started_spec_sha256) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(file, " changed since run ", run.options.resume,
                                                    " started; start a new run with roboloop run ", file));
}

// The run's id: a new run in `store`, or the reopened run `options.resume`, recorded with
// `options` and the pipeline's text.
absl::StatusOr<std::string> StartOrReopenRun(RunStore& store, const LoadedPipeline& loaded,
                                             const PipelineRunOptions& options) {
  const RunSettings settings{Sha256Hex(loaded.text), options.use_cache, RecordedPath(options.services_file),
                             RecordedPath(options.protocols_dir)};
  if (options.resume.empty()) {
    return store.CreateRun(loaded.pipeline.name(), RecordedPath(options.file), options.overrides, settings);
  }
  ROBOLOOP_RETURN_IF_ERROR(store.ReopenRun(options.resume, RecordedPath(options.file), options.overrides, settings));
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

// The names of the loop stages among `stages`, at any depth.
void CollectLoopNames(const google::protobuf::RepeatedPtrField<v1::Stage>& stages, const StageKindRegistry& kinds,
                      std::set<std::string>* loops) {
  for (const v1::Stage& stage : stages) {
    const StageKind* kind = kinds.Find(stage.kind());
    if (kind == nullptr || !kind->repeats_body) continue;
    loops->insert(stage.name());
    CollectLoopNames(stage.loop().stages(), kinds, loops);
  }
}

// Records a run's loops in its run store as they start and end, with their log files, so that
// `status` and `logs` show them as they show the stages the RecordingExecutor records; a loop's
// attempts are its iterations.
class LoopRecorder {
 public:
  LoopRecorder(RunStore* store, std::string run_id, std::string log_dir, const LoadedPipeline& loaded,
               const StageKindRegistry& kinds)
      : store_(store), run_id_(std::move(run_id)), log_dir_(std::move(log_dir)) {
    CollectLoopNames(loaded.pipeline.stages(), kinds, &loops_);
  }

  // Records `event` when it is a loop's start or end (events come one at a time).
  void OnEvent(const StageEvent& event) {
    const size_t dot = event.stage.rfind('.');
    if (loops_.count(dot == std::string::npos ? event.stage : event.stage.substr(dot + 1)) == 0) return;
    if (event.kind == StageEvent::Kind::kStarted) {
      absl::StatusOr<int64_t> id = store_->StartStage(run_id_, event.stage, "", "{}", StageLogPath(log_dir_, event.stage));
      if (id.ok()) open_[event.stage] = *id;
      return;
    }
    if (event.kind != StageEvent::Kind::kFinished && event.kind != StageEvent::Kind::kFailed) return;
    auto it = open_.find(event.stage);
    if (it == open_.end()) return;
    const std::string status = event.status.ok() ? "finished" : absl::IsCancelled(event.status) ? "cancelled" : "failed";
    // The loop's record is for reading only; a store that fails here fails the next stage's record too.
    (void)store_->FinishStage(it->second, status, event.attempt, event.outputs, std::string(event.status.message()));
    open_.erase(it);
  }

 private:
  RunStore* store_;
  std::string run_id_;
  std::string log_dir_;
  std::set<std::string> loops_;
  std::map<std::string, int64_t> open_;  // loop label -> its execution record
};

// The protocols the seed checks of a run on remote services read: a protocol named by name as the eval service at
// `address` (`eval`, which must outlive the loader) serves it, since that service evaluates under it, so the
// protocol need exist only there; a protocol file from the file. From an eval service older than GetProtocol the
// named protocol comes from `protocols_dir` here, noted on stderr once. Errors name the protocol and the service.
ProtocolLoader ServedProtocolLoader(const eval::EvalClient* eval, const std::string& address,
                                    const std::string& protocols_dir) {
  auto noted = std::make_shared<bool>(false);
  return [=](const std::string& name) -> absl::StatusOr<v1::Protocol> {
    if (eval::IsProtocolPath(name)) return eval::LoadProtocol(name, protocols_dir);
    absl::StatusOr<v1::ProtocolInfo> info = eval->GetProtocol(name);
    if (info.ok()) return info->protocol();
    const absl::Status& error = info.status();
    if (absl::IsNotFound(error)) {
      return absl::NotFoundError(absl::StrCat("protocol '", name, "' is not served by the eval service at ", address,
                                              ", which evaluates under it: ", error.message()));
    }
    if (!absl::IsUnimplemented(error)) {
      return absl::Status(error.code(), absl::StrCat("protocol '", name, "' could not be read from the eval service ",
                                                     "at ", address, ": ", error.message()));
    }
    if (!*noted) {
      *noted = true;
      std::fprintf(stderr,
                   "roboloop: note: the eval service at %s has no GetProtocol (an older roboloop): the seed checks "
                   "read the protocols the pipeline names (here '%s') from --protocols-dir %s here, which must hold "
                   "the protocols that service evaluates under\n",
                   address.c_str(), name.c_str(), protocols_dir.c_str());
    }
    return eval::LoadProtocol(name, protocols_dir);
  };
}

// The services of a run and their clients.
struct RunServices {
  std::unique_ptr<wiring::EmbeddedServices> embedded;  // null on remote services
  wiring::ServiceTargets targets;
  std::unique_ptr<wiring::ServiceClients> clients;
};

// Connects to the services `options` names, or starts them embedded (loading `loaded`'s task files).
absl::StatusOr<RunServices> StartOrConnectServices(const PipelineRunOptions& options, const LoadedPipeline& loaded) {
  wiring::EmbeddedOptions embedded_options;
  embedded_options.root = options.root;
  embedded_options.protocols_dir = options.protocols_dir;
  embedded_options.task_files = TaskFiles(loaded);
  embedded_options.dataset_checker = options.dataset_checker;
  RunServices services;
  ROBOLOOP_ASSIGN_OR_RETURN(services.targets,
                            wiring::StartOrLoadServices(options.services_file, embedded_options, &services.embedded));
  ROBOLOOP_ASSIGN_OR_RETURN(services.clients, wiring::ServiceClients::Connect(services.targets));
  return services;
}

// "<pipeline file>:<line>: task_files[<i>] <file>: " for messages on task file `i`.
std::string TaskFilePrefix(const LoadedPipeline& loaded, size_t i, const std::string& file) {
  const int line = i < loaded.task_file_lines.size() ? loaded.task_file_lines[i] : 0;
  return absl::StrCat(loaded.source, ":", line, ": task_files[", i, "] ", file, ": ");
}

}  // namespace

absl::Status CheckTaskFiles(const LoadedPipeline& loaded) {
  const std::vector<std::string> files = TaskFiles(loaded);
  std::vector<std::string> problems;
  std::map<std::string, std::string> declared_by;  // task name -> the file declaring it
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string prefix = TaskFilePrefix(loaded, i, files[i]);
    if (!PathExists(files[i])) {
      problems.push_back(prefix + "no such file");
      continue;
    }
    absl::StatusOr<std::unique_ptr<sim::Task>> task = sim::LoadYamlTask(files[i]);
    if (!task.ok()) {
      problems.push_back(prefix + std::string(task.status().message()));
      continue;
    }
    auto [first, inserted] = declared_by.emplace((*task)->name(), files[i]);
    if (!inserted) problems.push_back(absl::StrCat(prefix, "task '", first->first, "' is declared by ", first->second, " too"));
  }
  if (problems.empty()) {
    absl::StatusOr<std::unique_ptr<sim::TaskRegistry>> tasks = wiring::TaskRegistryWith({}, files);
    if (!tasks.ok()) problems.push_back(absl::StrCat(loaded.source, ": task_files: ", tasks.status().message()));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

std::string RecordedPath(const std::string& path) {
  return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
}

absl::StatusOr<std::string> ResumedSpecPath(const std::string& run_id, const std::string& recorded,
                                            const std::string& given) {
  const bool relative = std::filesystem::path(recorded).is_relative();
  if (!given.empty()) {
    const std::string path = RecordedPath(given);
    if (relative ? EndsWithPath(path, recorded) : path == recorded) return given;
    return absl::InvalidArgumentError(absl::StrCat("--resume ", run_id, " runs ", recorded, ", not ", given));
  }
  if (!relative || PathExists(recorded)) return recorded;
  return absl::FailedPreconditionError(absl::StrCat(
      "run ", run_id, " was recorded with the relative pipeline path ", recorded, ", which is not found from ",
      std::filesystem::current_path().string(), ": resume it from the folder it was started in, or pass the file: ",
      "roboloop run <path to ", recorded, "> --resume ", run_id));
}

absl::StatusOr<PipelineRunResult> RunPipelineFile(const PipelineRunOptions& given) {
  const StoreLayout layout(given.root);
  const StageKindRegistry& kinds = given.kinds != nullptr ? *given.kinds : BuiltinStageKinds();
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, RunStore::Open(layout.PipelineRuns()));
  ROBOLOOP_ASSIGN_OR_RETURN(const ResolvedRun resolved, Resolve(*store, given));
  const PipelineRunOptions& options = resolved.options;
  ROBOLOOP_RETURN_IF_ERROR(CheckSpecUnchanged(resolved));
  ROBOLOOP_ASSIGN_OR_RETURN(LoadedPipeline loaded, LoadWithOverrides(options.file, options.overrides));
  ValidationOptions validation;
  validation.protocols_dir = options.protocols_dir;
  // Remote services are connected to first: their eval service has the protocols the seed checks read. Embedded
  // ones start once the pipeline is valid, and read the protocols from here.
  const bool remote = !options.services_file.empty();
  RunServices services;
  if (remote) {
    ROBOLOOP_ASSIGN_OR_RETURN(services, StartOrConnectServices(options, loaded));
    validation.load_protocol =
        ServedProtocolLoader(&services.clients->eval(), services.targets.eval.target, options.protocols_dir);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(Plan plan, ValidatePipeline(loaded, kinds, validation));
  ROBOLOOP_RETURN_IF_ERROR(CheckTaskFiles(loaded));
  if (!remote) {
    ROBOLOOP_ASSIGN_OR_RETURN(services, StartOrConnectServices(options, loaded));
  }
  const wiring::ServiceTargets& targets = services.targets;
  wiring::ServiceClients* clients = services.clients.get();
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::TaskRegistry> tasks, wiring::TaskRegistryWith({}, TaskFiles(loaded)));

  PipelineRunResult result;
  result.pipeline = loaded.pipeline.name();
  ROBOLOOP_ASSIGN_OR_RETURN(result.run_id, StartOrReopenRun(*store, loaded, options));
  ExecutorOptions executor_options = ExecutorOptionsFor(layout, loaded, result.run_id);
  executor_options.tasks = tasks.get();
  if (targets.embedded) executor_options.train_root = options.root;
  const std::string log_dir = JoinPath(executor_options.run_dir, "logs");
  ServiceStageExecutor services_executor(clients, executor_options);
  RecordingExecutor executor(&services_executor, store.get(), result.run_id, options.use_cache, log_dir);

  SchedulerOptions scheduler;
  scheduler.threads = options.threads;
  scheduler.cancel = options.cancel;
  std::function<void(const StageEvent&)> observer;
  if (options.on_start) observer = options.on_start(StartedRun{result.run_id, loaded.pipeline.name(), targets.embedded, log_dir});
  LoopRecorder loops(store.get(), result.run_id, log_dir, loaded, kinds);
  scheduler.observer = [&loops, &observer](const StageEvent& event) {
    loops.OnEvent(event);
    if (observer) observer(event);
  };
  scheduler.produced = &result.outcome;
  result.status = RunPipeline(loaded, plan, executor, scheduler).status();
  ROBOLOOP_RETURN_IF_ERROR(store->FinishRun(result.run_id, EndState(result.status, options.cancel),
                                            std::string(result.status.message())));
  if (result.status.ok() || UnmetLoopOf(result.status).has_value()) {
    result.summary = Summary(services_executor.services(), plan, loaded, result.outcome);
  }
  return result;
}

}  // namespace roboloop::pipeline
