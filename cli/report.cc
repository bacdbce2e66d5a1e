#include "cli/report.h"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "pipeline/run_store.h"
#include "report/report.h"
#include "wiring/services.h"
#include "wiring/tasks.h"

namespace roboloop::cli {
namespace {

// Flags of `report`, filled by CLI11 before the action runs.
struct ReportFlags {
  std::string model;
  std::string run;
  std::string output = "report.html";
  std::string root = ".roboloop";
  std::string services;
  std::string protocols_dir = "configs/protocols";
  bool no_animation = false;
};

// The model run `run_id` promoted (or reported on): from its promote/report stage parameters.
absl::StatusOr<std::string> ModelOfRun(const ReportFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, pipeline::RunStore::Open(StoreLayout(f.root).PipelineRuns()));
  ROBOLOOP_ASSIGN_OR_RETURN(pipeline::RunRecord run, store->GetRun(f.run));
  for (auto it = run.stages.rbegin(); it != run.stages.rend(); ++it) {
    const nlohmann::json params = nlohmann::json::parse(it->params_json, nullptr, false);
    if (!params.is_object()) continue;
    for (const char* kind : {"promote", "report"}) {
      if (params.value("kind", "") == kind && params.contains(kind) && params[kind].contains("model")) {
        return params[kind]["model"].get<std::string>();
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("run ", f.run, " has no promote or report stage naming a model"));
}

absl::Status Report(const ReportFlags& f) {
  if (f.model.empty() == f.run.empty()) return UsageError("give exactly one of --model M and --run RUN");
  std::string model = f.model;
  if (!f.run.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(model, ModelOfRun(f));
  }
  std::unique_ptr<wiring::EmbeddedServices> embedded;
  wiring::EmbeddedOptions options;
  options.root = f.root;
  options.protocols_dir = f.protocols_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(wiring::ServiceTargets targets,
                            wiring::StartOrLoadServices(f.services, options, &embedded));
  ROBOLOOP_ASSIGN_OR_RETURN(auto clients, wiring::ServiceClients::Connect(targets));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<sim::TaskRegistry> tasks, wiring::TaskRegistryWith({}, {}));
  report::ReportRequest request;
  request.model = model;
  request.title = absl::StrCat("roboloop report — ", model);
  request.output = f.output;
  if (targets.embedded) request.train_root = f.root;
  if (!f.no_animation) request.animation.tasks = tasks.get();
  request.animation.cache_dir = StoreLayout(f.root).PolicyCache();
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path, report::WriteModelReport(*clients, request));
  std::printf("wrote %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

void AddReportCommand(CLI::App& app, CommandRunner& runner) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* command = app.add_subcommand("report", "Write a model's self-contained HTML report");
  command->add_option("--model", f->model, "Registry model");
  command->add_option("--run", f->run, "Pipeline run: report the model it promoted");
  command->add_option("-o,--output", f->output, "HTML file to write")->capture_default_str();
  command->add_option("--root", f->root, "Store (registry, leaderboard, runs)")->capture_default_str();
  command->add_option("--services", f->services, "Services file (default: embedded services on --root)");
  command->add_option("--protocols-dir", f->protocols_dir, "Where named protocols live")->capture_default_str();
  command->add_flag("--no-animation", f->no_animation, "Leave out the rendered episodes");
  runner.Bind(command, [f] { return Report(*f); });
}

}  // namespace roboloop::cli
