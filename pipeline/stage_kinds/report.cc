#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "pipeline/run_store.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"
#include "report/report.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunReport(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::ReportStage& r = stage.report();
  const ExecutorOptions& options = services.options();
  report::ReportRequest request;
  request.model = r.model();
  request.title = absl::StrCat(options.pipeline, " — ", r.model());
  request.output = r.output().empty() ? FileStem(context.label) + ".html" : r.output();
  if (request.output.front() != '/') request.output = JoinPath(options.run_dir, request.output);
  request.train_root = options.train_root;
  request.animation.tasks = options.tasks;
  request.animation.cache_dir = options.policy_cache_dir;
  ROBOLOOP_ASSIGN_OR_RETURN(std::string path, report::WriteModelReport(services.clients(), request));
  context.Report(1, 1, "", absl::StrCat("wrote ", path));
  return StageOutputs{{"path", path}};
}

}  // namespace

StageKind ReportStageKind() {
  StageKind kind;
  kind.name = "report";
  kind.params = v1::ReportStage::descriptor();
  kind.outputs = {"path"};
  kind.reusable_across_runs = false;  // it shows the registry and leaderboard as they are now
  kind.run = RunReport;
  kind.summarize = [](const v1::Stage&, const StageOutputs& outputs, StageServices&) {
    return outputs.count("path") ? std::vector<std::string>{absl::StrCat("report: ", outputs.at("path"))}
                                 : std::vector<std::string>{};
  };
  return kind;
}

}  // namespace roboloop::pipeline
