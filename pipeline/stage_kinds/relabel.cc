#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunRelabel(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  const v1::RelabelStage& r = stage.relabel();
  if (r.dataset().empty()) {
    context.Report(0, 0, "demos", "nothing to relabel (no failed episodes)");
    return StageOutputs{{"dataset", ""}};
  }
  v1::RelabelRequest request;
  request.set_input_ref(r.dataset());
  request.set_task(r.task());
  request.set_overwrite(true);
  request.set_output_path(services.ServerDatasetPath(context, ""));
  request.set_register_as(r.dataset_name().empty() ? services.DefaultName(context.label) : r.dataset_name());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::DatasetWritten written,
                            services.clients().sim().Relabel(request, absl::Hours(24), context.cancel));
  context.Report(static_cast<double>(written.episodes_written()), static_cast<double>(written.episodes_written()),
                 "demos", absl::StrCat("relabelled by the expert, registered ", written.dataset_ref()));
  return StageOutputs{{"dataset", written.dataset_id()}};
}

}  // namespace

StageKind RelabelStageKind() {
  StageKind kind;
  kind.name = "relabel";
  kind.params = v1::RelabelStage::descriptor();
  kind.outputs = {"dataset"};
  kind.run = RunRelabel;
  return kind;
}

}  // namespace roboloop::pipeline
