#include "cli/run.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/pipeline.h"
#include "cli/table.h"
#include "common/cancellation.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/signal_cancellation.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "eval/protocol.h"
#include "pipeline/run_progress.h"
#include "pipeline/run_store.h"
#include "pipeline/runner.h"
#include "pipeline/scheduler.h"

namespace roboloop::cli {
namespace {

// Flags of the run commands, filled by CLI11 before the action runs.
struct RunFlags {
  std::string file;
  std::vector<std::string> sets;
  std::string services;
  std::string root = ".roboloop";
  std::string protocols_dir;  // "" = the runner's default (a resumed run: its own)
  std::string resume;
  bool no_cache = false;
  int threads = 4;
  int limit = 20;
  Format format = Format::kTable;  // runs / status
  std::string run;    // status / logs
  std::string stage;  // logs
};

std::string StorePath(const RunFlags& f) { return StoreLayout(f.root).PipelineRuns(); }

// The run store under --root for commands that only read it: NotFound naming the folder when
// it holds none (nothing is created).
absl::StatusOr<std::unique_ptr<pipeline::RunStore>> OpenExistingStore(const RunFlags& f) {
  if (!PathExists(StorePath(f))) {
    return absl::NotFoundError(absl::StrCat("--root ", f.root, " holds no pipeline runs (no ", StorePath(f), ")"));
  }
  return pipeline::RunStore::Open(StorePath(f));
}

// Prints the run's summary under "run RUN of PIPELINE <how_it_ended>".
void PrintSummary(const pipeline::PipelineRunResult& result, const std::string& how_it_ended) {
  std::printf("\nrun %s of %s %s\n", result.run_id.c_str(), result.pipeline.c_str(), how_it_ended.c_str());
  for (const std::string& line : result.summary) std::printf("  %s\n", line.c_str());
}

constexpr size_t kMinRunIdPrefix = 6;  // characters of a run id that may stand for it (as for registry ids)
constexpr int kMatchesListed = 10;     // runs an ambiguous prefix's error lists

// The id of the run `given` names in `store`: `given` when a run has that id, else the one run
// whose id starts with it when it has at least kMinRunIdPrefix characters. NotFound naming it when
// no run matches; a usage error listing the matching runs when several do.
absl::StatusOr<std::string> FullRunId(pipeline::RunStore& store, const std::string& given) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> matches, store.RunIdsStartingWith(given, kMatchesListed + 1));
  if (std::find(matches.begin(), matches.end(), given) != matches.end()) return given;
  if (matches.empty() || given.size() < kMinRunIdPrefix) {
    return absl::NotFoundError(absl::StrCat("no pipeline run ", given,
                                            given.size() < kMinRunIdPrefix && !matches.empty()
                                                ? absl::StrCat(" (a run id prefix needs at least ", kMinRunIdPrefix,
                                                               " characters)")
                                                : ""));
  }
  if (matches.size() == 1) return matches.front();
  const bool more = matches.size() > static_cast<size_t>(kMatchesListed);
  if (more) matches.resize(kMatchesListed);
  return UsageError(absl::StrCat("run id prefix ", given, " is ambiguous; candidates: ", absl::StrJoin(matches, ", "),
                                 more ? ", ..." : "", " (give more of the id)"));
}

// What `roboloop run` prints and exits with for a recorded run that ended: the summary (0), a
// resumable cancellation (130; also when a signal came and a stage then failed), the summary and
// then the unmet loop (3), or the failure (1).
absl::Status ExitOf(const pipeline::PipelineRunResult& result, const std::string& root, bool interrupted) {
  const absl::Status& error = result.status;
  if (error.ok()) {
    PrintSummary(result, "finished");
    return absl::OkStatus();
  }
  if (interrupted || absl::IsCancelled(error)) {
    return WithExitCode(absl::CancelledError(absl::StrCat("run ", result.run_id, " cancelled; continue it with roboloop run --resume ",
                                                          result.run_id, " --root ", root)),
                        kExitCancelled);
  }
  const std::string message = absl::StrCat("run ", result.run_id, " failed: ", error.message());
  if (const std::optional<pipeline::UnmetLoop> unmet = pipeline::UnmetLoopOf(error); unmet.has_value()) {
    PrintSummary(result, absl::StrCat("ended: loop ", unmet->loop, " ran ", unmet->iterations,
                                      " iteration(s) without meeting its condition ", unmet->condition));
    return WithExitCode(absl::FailedPreconditionError(message + " (its checkpoints and datasets stay registered)"),
                        kExitConditionNotMet);
  }
  return absl::Status(error.code(), message);
}

absl::Status RunPipelineCommand(const RunFlags& flags) {
  RunFlags f = flags;
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StorePath(f)));
  if (!f.resume.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(f.resume, FullRunId(*store, f.resume));
    ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord previous, store->GetRun(f.resume));
    if (previous.status == "finished") return absl::FailedPreconditionError(absl::StrCat("run ", f.resume, " already finished"));
    absl::StatusOr<std::string> spec = pipeline::ResumedSpecPath(f.resume, previous.spec_path, f.file);
    if (!spec.ok()) return UsageError(std::string(spec.status().message()));
    f.file = *spec;
  }
  if (f.file.empty()) return UsageError("give a pipeline FILE (or --resume RUN)");
  common::CancellationToken cancel;
  const common::CancellationCallback announce = cancel.OnCancel([] {
    std::fprintf(stderr, "\nroboloop: cancelling the run (running stages are stopped through their services)\n");
  });
  std::unique_ptr<pipeline::RunProgressPrinter> printer;
  pipeline::PipelineRunOptions options;
  options.file = f.file;
  options.overrides = f.sets;
  options.resume = f.resume;
  options.services_file = f.services;
  options.root = f.root;
  options.protocols_dir = f.protocols_dir;
  options.dataset_checker = kThisProgram;
  options.use_cache = !f.no_cache;
  options.threads = f.threads;
  options.cancel = &cancel;
  options.on_start = [&](const pipeline::StartedRun& run) -> std::function<void(const pipeline::StageEvent&)> {
    std::printf("run %s: pipeline %s (%s) on %s services; logs in %s\n", run.run_id.c_str(), run.pipeline.c_str(),
                f.file.c_str(), run.embedded ? "embedded" : "remote", run.log_dir.c_str());
    printer = std::make_unique<pipeline::RunProgressPrinter>(stdout, run.log_dir);
    return [&printer](const pipeline::StageEvent& event) { printer->OnEvent(event); };
  };
  absl::StatusOr<pipeline::PipelineRunResult> result;
  {
    ROBOLOOP_ASSIGN_OR_RETURN(auto signals, common::SignalCancellation::Create(&cancel));
    result = pipeline::RunPipelineFile(options);
  }
  ROBOLOOP_RETURN_IF_ERROR(result.status());
  return ExitOf(*result, f.root, cancel.IsCancelled());
}

std::string Time(int64_t us) { return us == 0 ? "-" : FormatTimeUtc(us); }

std::string Duration(int64_t from_us, int64_t to_us) {
  if (from_us == 0 || to_us == 0) return "-";
  return absl::StrFormat("%.1fs", static_cast<double>(to_us - from_us) / 1e6);
}

// A run's fields as JSON (times in microseconds since the epoch, 0 = not yet); the stages are
// the caller's to add.
nlohmann::json RunJson(const pipeline::RunRecord& r) {
  return {{"id", r.id},
          {"pipeline", r.pipeline},
          {"status", r.status},
          {"spec_path", r.spec_path},
          {"created_unix_us", r.created_us},
          {"finished_unix_us", r.finished_us},
          {"message", r.message}};
}

// A stage execution as JSON: its outputs as the object they were stored as.
nlohmann::json StageJson(const pipeline::StageExecutionRecord& s) {
  const nlohmann::json outputs = nlohmann::json::parse(s.outputs_json, nullptr, /*allow_exceptions=*/false);
  return {{"stage", s.stage},
          {"status", s.status},
          {"attempts", s.attempts},
          {"started_unix_us", s.started_us},
          {"finished_unix_us", s.finished_us},
          {"outputs", outputs.is_object() ? outputs : nlohmann::json::object()},
          {"message", s.message},
          {"log_path", s.log_path}};
}

// Prints `json` indented; bytes that are not UTF-8 (a stage's error text) become U+FFFD.
void PrintJson(const nlohmann::json& json) {
  std::printf("%s\n", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

absl::Status ListRuns(const RunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, OpenExistingStore(f));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<pipeline::RunRecord> runs, store->ListRuns(f.limit));
  if (f.format == Format::kJson) {
    nlohmann::json listed = nlohmann::json::array();
    for (const pipeline::RunRecord& r : runs) listed.push_back(RunJson(r));
    PrintJson(nlohmann::json{{"runs", listed}});
    return absl::OkStatus();
  }
  Table table({"RUN", "PIPELINE", "STATUS", "STARTED", "DURATION", "SPEC"});
  for (const pipeline::RunRecord& r : runs) {
    table.AddRow({r.id, r.pipeline, r.status, Time(r.created_us), Duration(r.created_us, r.finished_us), r.spec_path});
  }
  std::printf("%s", table.Render().c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunOrNewest(const RunFlags& f, pipeline::RunStore& store) {
  if (!f.run.empty()) return FullRunId(store, f.run);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<pipeline::RunRecord> runs, store.ListRuns(1));
  if (runs.empty()) return absl::NotFoundError(absl::StrCat("no pipeline runs in ", StorePath(f)));
  return runs.front().id;
}

absl::Status ShowStatus(const RunFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, OpenExistingStore(f));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string id, RunOrNewest(f, *store));
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord run, store->GetRun(id));
  if (f.format == Format::kJson) {
    nlohmann::json json = RunJson(run);
    json["stages"] = nlohmann::json::array();
    for (const pipeline::StageExecutionRecord& s : run.stages) json["stages"].push_back(StageJson(s));
    PrintJson(json);
    return absl::OkStatus();
  }
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
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, OpenExistingStore(f));
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string id, FullRunId(*store, f.run));
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord run, store->GetRun(id));
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
  run->add_option("--set", f->sets,
                  "Override PATH=VALUE (e.g. train.steps=5000; repeatable; on --resume, on top of the run's own)")
      ->check(OverrideText());
  run->add_option("--services", f->services,
                  "Services file (configs/services/*.yaml); default: embedded services (on --resume: the run's own)");
  run->add_option("--root", f->root, "Store of runs, registry, leaderboard")->capture_default_str();
  run->add_option("--protocols-dir", f->protocols_dir,
                  absl::StrCat("Where named protocols live; default: ", eval::kDefaultProtocolsDir,
                               " (on --resume: the run's own). With --services the eval service's own protocols are "
                               "used, and this folder only for an eval service older than GetProtocol"));
  run->add_option("--resume", f->resume,
                  "Continue run RUN (its id or a unique prefix of at least 6 characters; finished stages are not "
                  "redone; its file, --set values, --services, --protocols-dir and --no-cache are kept)");
  run->add_flag("--no-cache", f->no_cache, "Run every stage, even when an earlier run did the same");
  run->add_option("--threads", f->threads, "Stages running at once")->capture_default_str();
  runner.Bind(run, [f] { return RunPipelineCommand(*f); });

  auto lf = std::make_shared<RunFlags>();
  CLI::App* runs = app.add_subcommand("runs", "List pipeline runs, newest first");
  runs->add_option("--root", lf->root, "Store of runs")->capture_default_str();
  runs->add_option("--limit", lf->limit, "Runs shown")->capture_default_str();
  AddFormatOption(runs, &lf->format);
  runner.Bind(runs, [lf] { return ListRuns(*lf); });

  auto sf = std::make_shared<RunFlags>();
  CLI::App* status = app.add_subcommand("status", "Show a pipeline run's stages (default: the newest run)");
  status->add_option("RUN", sf->run, "Run id (or a unique prefix of at least 6 characters)");
  status->add_option("--root", sf->root, "Store of runs")->capture_default_str();
  AddFormatOption(status, &sf->format);
  runner.Bind(status, [sf] { return ShowStatus(*sf); });

  auto gf = std::make_shared<RunFlags>();
  CLI::App* logs = app.add_subcommand("logs", "Print a pipeline run's stage logs");
  logs->add_option("RUN", gf->run, "Run id (or a unique prefix of at least 6 characters)")->required();
  logs->add_option("STAGE", gf->stage, "Only this stage (e.g. train or improve[2].gate)");
  logs->add_option("--root", gf->root, "Store of runs")->capture_default_str();
  runner.Bind(logs, [gf] { return ShowLogs(*gf); });
}

}  // namespace roboloop::cli
