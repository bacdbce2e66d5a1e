#include "cli/run.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/table.h"
#include "common/cancellation.h"
#include "common/fs.h"
#include "common/signal_cancellation.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "pipeline/run_progress.h"
#include "pipeline/run_store.h"
#include "pipeline/scheduler.h"
#include "pipeline/spec.h"
#include "pipeline/stage_executor.h"
#include "pipeline/stage_kinds/builtin.h"
#include "wiring/services.h"

namespace roboloop::cli {
namespace {

using pipeline::RunOutcome;
using pipeline::StageOutputs;

// Flags of the run commands, filled by CLI11 before the action runs.
struct RunFlags {
  std::string file;
  std::vector<std::string> sets;
  std::string services;
  std::string root = ".roboloop";
  std::string protocols_dir = "configs/protocols";
  std::string resume;
  bool no_cache = false;
  int threads = 4;
  int limit = 20;
  std::string run;    // status / logs
  std::string stage;  // logs
};

std::string StorePath(const RunFlags& f) { return StoreLayout(f.root).PipelineRuns(); }
std::string RunDir(const RunFlags& f, const std::string& id) { return StoreLayout(f.root).PipelineRunDir(id); }

absl::StatusOr<pipeline::LoadedPipeline> LoadWithOverrides(const std::string& file, const std::vector<std::string>& sets) {
  std::vector<pipeline::Override> overrides;
  for (const std::string& set : sets) {
    ROBOLOOP_ASSIGN_OR_RETURN(pipeline::Override o, pipeline::ParseOverride(set));
    overrides.push_back(o);
  }
  return pipeline::LoadPipeline(file, overrides);
}

// `stage` with the run's references and variables substituted where they have values.
v1::Stage Resolved(const v1::Stage& stage, const pipeline::LoadedPipeline& loaded, const RunOutcome& outcome) {
  const std::map<std::string, std::string> vars(loaded.pipeline.vars().begin(), loaded.pipeline.vars().end());
  v1::Stage resolved = stage;
  (void)pipeline::VisitStageStrings(&resolved, [&](std::string* text) {
    absl::StatusOr<std::string> substituted = pipeline::Substitute(*text, outcome.outputs, vars);
    if (substituted.ok()) *text = *std::move(substituted);
    return absl::OkStatus();
  });
  return resolved;
}

// Loop iterations and what each finished top-level stage's kind has to say of it.
void PrintSummary(pipeline::StageServices& services, const pipeline::Plan& plan, const pipeline::LoadedPipeline& loaded,
                  const RunOutcome& outcome, const std::string& run_id) {
  std::printf("\nrun %s of %s finished\n", run_id.c_str(), loaded.pipeline.name().c_str());
  for (const auto& [loop, iterations] : outcome.loop_iterations) std::printf("  %s: %d iteration(s)\n", loop.c_str(), iterations);
  for (const v1::Stage& stage : loaded.pipeline.stages()) {
    auto it = outcome.outputs.find(stage.name());
    const pipeline::StageKind* kind = plan.kinds->Find(stage.kind());
    if (it == outcome.outputs.end() || !kind->summarize) continue;
    for (const std::string& line : kind->summarize(Resolved(stage, loaded, outcome), it->second, services)) {
      std::printf("  %s\n", line.c_str());
    }
  }
}

absl::Status RunPipelineCommand(const RunFlags& flags) {
  RunFlags f = flags;
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StorePath(f)));
  if (!f.resume.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord previous, store->GetRun(f.resume));
    if (previous.status == "finished") return absl::FailedPreconditionError(absl::StrCat("run ", f.resume, " already finished"));
    if (!f.file.empty() && f.file != previous.spec_path) {
      return UsageError(absl::StrCat("--resume ", f.resume, " runs ", previous.spec_path, ", not ", f.file));
    }
    f.file = previous.spec_path;
    if (f.sets.empty()) f.sets = previous.overrides;
  }
  if (f.file.empty()) return UsageError("give a pipeline FILE (or --resume RUN)");
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::LoadedPipeline loaded, LoadWithOverrides(f.file, f.sets));
  pipeline::ValidationOptions validation;
  validation.protocols_dir = f.protocols_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::Plan plan, pipeline::ValidatePipeline(loaded, pipeline::BuiltinStageKinds(), validation));

  std::unique_ptr<wiring::EmbeddedServices> embedded;
  wiring::EmbeddedOptions embedded_options;
  embedded_options.root = f.root;
  embedded_options.protocols_dir = f.protocols_dir;
  embedded_options.task_files = pipeline::TaskFiles(loaded);
  ROBOLOOP_ASSIGN_OR_RETURN(wiring::ServiceTargets targets,
                            wiring::StartOrLoadServices(f.services, embedded_options, &embedded));
  ROBOLOOP_ASSIGN_OR_RETURN(auto clients, wiring::ServiceClients::Connect(targets));
  std::string run_id = f.resume;
  if (run_id.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(run_id, store->CreateRun(loaded.pipeline.name(), f.file, f.sets));
  } else {
    ROBOLOOP_RETURN_IF_ERROR(store->ReopenRun(run_id));
  }
  std::printf("run %s: pipeline %s (%s) on %s services; logs in %s\n", run_id.c_str(), loaded.pipeline.name().c_str(),
              f.file.c_str(), targets.embedded ? "embedded" : "remote", JoinPath(RunDir(f, run_id), "logs").c_str());

  pipeline::ExecutorOptions options;
  options.pipeline = loaded.pipeline.name();
  options.run_id = run_id;
  options.run_dir = RunDir(f, run_id);
  options.cache_dir = StoreLayout(f.root).DatasetCache();
  options.policy_cache_dir = StoreLayout(f.root).PolicyCache();
  options.sim_threads = static_cast<int>(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::TaskRegistry> tasks, wiring::LocalTasks(pipeline::TaskFiles(loaded)));
  options.tasks = tasks.get();
  if (targets.embedded) options.train_root = f.root;
  pipeline::ServiceStageExecutor services_executor(clients.get(), options);
  pipeline::RecordingExecutor executor(&services_executor, store.get(), run_id, !f.no_cache,
                                       JoinPath(options.run_dir, "logs"));
  pipeline::RunProgressPrinter printer(stdout, JoinPath(options.run_dir, "logs"));
  common::CancellationToken cancel;
  pipeline::SchedulerOptions scheduler;
  scheduler.threads = f.threads;
  scheduler.cancel = &cancel;
  scheduler.observer = [&printer](const pipeline::StageEvent& event) { printer.OnEvent(event); };
  const common::CancellationCallback announce = cancel.OnCancel([] {
    std::fprintf(stderr, "\nroboloop: cancelling the run (running stages are stopped through their services)\n");
  });
  absl::StatusOr<RunOutcome> outcome;
  {
    ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::SignalCancellation::Create(&cancel));
    outcome = pipeline::RunPipeline(loaded, plan, executor, scheduler);
  }
  if (outcome.ok()) {
    ROBOLOOP_RETURN_IF_ERROR(store->FinishRun(run_id, "finished", ""));
    PrintSummary(services_executor.services(), plan, loaded, *outcome, run_id);
    return absl::OkStatus();
  }
  const absl::Status& error = outcome.status();
  if (cancel.IsCancelled() || absl::IsCancelled(error)) {
    ROBOLOOP_RETURN_IF_ERROR(store->FinishRun(run_id, "cancelled", std::string(error.message())));
    return WithExitCode(absl::CancelledError(absl::StrCat("run ", run_id, " cancelled; continue it with roboloop run --resume ",
                                                          run_id, " --root ", f.root)),
                        kExitCancelled);
  }
  ROBOLOOP_RETURN_IF_ERROR(store->FinishRun(run_id, "failed", std::string(error.message())));
  const std::string message = absl::StrCat("run ", run_id, " failed: ", error.message());
  if (pipeline::UnmetLoopOf(error).has_value()) {
    return WithExitCode(absl::FailedPreconditionError(message + " (its checkpoints and datasets stay registered)"),
                        kExitConditionNotMet);
  }
  return absl::Status(error.code(), message);
}

std::string Time(int64_t us) { return us == 0 ? "-" : FormatTimeUtc(us); }

std::string Duration(int64_t from_us, int64_t to_us) {
  if (from_us == 0 || to_us == 0) return "-";
  return absl::StrFormat("%.1fs", static_cast<double>(to_us - from_us) / 1e6);
}

absl::Status ListRuns(const RunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StorePath(f)));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<pipeline::RunRecord> runs, store->ListRuns(f.limit));
  Table table({"RUN", "PIPELINE", "STATUS", "STARTED", "DURATION", "SPEC"});
  for (const pipeline::RunRecord& r : runs) {
    table.AddRow({r.id, r.pipeline, r.status, Time(r.created_us), Duration(r.created_us, r.finished_us), r.spec_path});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunOrNewest(const RunFlags& f, pipeline::RunStore& store) {
  if (!f.run.empty()) return f.run;
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<pipeline::RunRecord> runs, store.ListRuns(1));
  if (runs.empty()) return absl::NotFoundError(absl::StrCat("no pipeline runs in ", StorePath(f)));
  return runs.front().id;
}

absl::Status ShowStatus(const RunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StorePath(f)));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, RunOrNewest(f, *store));
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord run, store->GetRun(id));
  std::printf("run %s: %s %s, started %s, %s%s%s\n", run.id.c_str(), run.pipeline.c_str(), run.status.c_str(),
              Time(run.created_us).c_str(), run.spec_path.c_str(), run.message.empty() ? "" : "\n  ", run.message.c_str());
  Table table({"STAGE", "STATUS", "ATTEMPTS", "DURATION", "OUTPUTS / ERROR"});
  for (const pipeline::StageExecutionRecord& s : run.stages) {
    table.AddRow({s.stage, s.status, std::to_string(s.attempts), Duration(s.started_us, s.finished_us),
                  s.message.empty() ? s.outputs_json : s.message});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::Status ShowLogs(const RunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StorePath(f)));
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord run, store->GetRun(f.run));
  std::vector<std::string> printed;
  for (const pipeline::StageExecutionRecord& s : run.stages) {
    if (!f.stage.empty() && s.stage != f.stage && !absl::EndsWith(s.stage, "." + f.stage)) continue;
    if (s.log_path.empty() || std::find(printed.begin(), printed.end(), s.log_path) != printed.end()) continue;
    absl::StatusOr<std::string> text = ReadFile(s.log_path);
    if (!text.ok()) continue;
    std::printf("== %s (%s)\n%s", s.stage.c_str(), s.log_path.c_str(), text->c_str());
    printed.push_back(s.log_path);
  }
  if (printed.empty()) {
    return absl::NotFoundError(f.stage.empty() ? absl::StrCat("run ", run.id, " has no stage logs")
                                               : absl::StrCat("run ", run.id, " has no stage '", f.stage, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

void AddRunCommands(CLI::App& app, CommandRunner& runner) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* run = app.add_subcommand("run", "Run a pipeline (configs/pipelines/*.yaml) on embedded or remote services");
  run->add_option("FILE", f->file, "Pipeline YAML");
  run->add_option("--set", f->sets, "Override PATH=VALUE (e.g. train.steps=5000; repeatable)");
  run->add_option("--services", f->services, "Services file (configs/services/*.yaml); default: embedded services");
  run->add_option("--root", f->root, "Store of runs, registry, leaderboard")->capture_default_str();
  run->add_option("--protocols-dir", f->protocols_dir, "Where named protocols live")->capture_default_str();
  run->add_option("--resume", f->resume, "Continue run RUN (finished stages are not redone)");
  run->add_flag("--no-cache", f->no_cache, "Run every stage, even when an earlier run did the same");
  run->add_option("--threads", f->threads, "Stages running at once")->capture_default_str();
  runner.Bind(run, [f] { return RunPipelineCommand(*f); });

  auto lf = std::make_shared<RunFlags>();
  CLI::App* runs = app.add_subcommand("runs", "List pipeline runs, newest first");
  runs->add_option("--root", lf->root, "Store of runs")->capture_default_str();
  runs->add_option("--limit", lf->limit, "Runs shown")->capture_default_str();
  runner.Bind(runs, [lf] { return ListRuns(*lf); });

  auto sf = std::make_shared<RunFlags>();
  CLI::App* status = app.add_subcommand("status", "Show a pipeline run's stages (default: the newest run)");
  status->add_option("RUN", sf->run, "Run id");
  status->add_option("--root", sf->root, "Store of runs")->capture_default_str();
  runner.Bind(status, [sf] { return ShowStatus(*sf); });

  auto gf = std::make_shared<RunFlags>();
  CLI::App* logs = app.add_subcommand("logs", "Print a pipeline run's stage logs");
  logs->add_option("RUN", gf->run, "Run id")->required();
  logs->add_option("STAGE", gf->stage, "Only this stage (e.g. train or improve[2].gate)");
  logs->add_option("--root", gf->root, "Store of runs")->capture_default_str();
  runner.Bind(logs, [gf] { return ShowLogs(*gf); });
}

}  // namespace roboloop::cli
