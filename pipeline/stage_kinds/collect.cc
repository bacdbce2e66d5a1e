#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunCollect(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::CollectStage& c = stage.collect();
  v1::CollectRequest request = CollectRequestFor(c.task(), c.policy().empty() ? "expert" : c.policy(), c.base_seed(),
                                                 c.first_episode(), c.episodes(), c.max_steps(),
                                                 services.options().sim_threads);
  request.set_success_only(c.success_only());
  request.set_overwrite(true);
  request.set_output_path(services.ServerDatasetPath(context, ""));
  request.set_register_as(c.dataset_name().empty() ? services.DefaultName(context.label) : c.dataset_name());
  context.Report(0, static_cast<double>(c.episodes()), "episodes", "collecting");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written,
                            services.clients().sim().Collect(request, absl::Hours(24), context.cancel));
  context.Report(static_cast<double>(written.episodes_run()), static_cast<double>(c.episodes()), "episodes",
                 absl::StrCat(written.successes(), " successes, registered ", written.dataset_ref()));
  return StageOutputs{{"dataset", written.dataset_id()}};
}

}  // namespace

StageKind CollectStageKind() {
  StageKind kind;
  kind.name = "collect";
  kind.params = v1::CollectStage::descriptor();
  kind.outputs = {"dataset"};
  kind.seeds = [](const v1::Stage& stage) {
    const v1::CollectStage& c = stage.collect();
    return SeedClaims{{{c.base_seed(), c.first_episode(), c.episodes(), "collect"}}, "", false};
  };
  kind.run = RunCollect;
  return kind;
}

}  // namespace roboloop::pipeline
