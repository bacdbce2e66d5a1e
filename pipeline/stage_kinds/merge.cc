#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/tools.h"
#include "pipeline/run_store.h"
#include "pipeline/stage_kinds/builtin.h"
#include "pipeline/stage_services.h"

namespace roboloop::pipeline {
namespace {

absl::StatusOr<StageOutputs> RunMerge(const v1::Stage& stage, const StageContext& context, StageServices& services) {
  std::vector<std::string> refs;
  for (const std::string& ref : stage.merge().datasets()) {
    if (!ref.empty()) refs.push_back(ref);
  }
  if (refs.empty()) return absl::InvalidArgumentError(absl::StrCat("stage ", context.label, ": no dataset to merge"));
  if (refs.size() == 1) {
    context.Report(1, 1, "datasets", "one input: passed through");
    return StageOutputs{{"dataset", refs.front()}};
  }
  data::MergeOptions merge;
  for (const std::string& ref : refs) {
    ROBOLOOP_RETURN_IF_ERROR(context.CheckCancelled());
    ROBOLOOP_ASSIGN_OR_RETURN(std::string path, services.LocalDataset(ref));
    merge.inputs.push_back(path);
  }
  const std::string& run_dir = services.options().run_dir;
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(run_dir));
  merge.output = JoinPath(run_dir, FileStem(context.label) + ".hdf5");
  merge.overwrite = true;
  ROBOLOOP_ASSIGN_OR_RETURN(data::DatasetLayout layout, data::MergeDatasets(merge));
  registry::RegistryClient& registry = services.clients().registry();
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, registry.UploadFile(merge.output));
  v1::RegisterDatasetRequest request;
  request.set_name(stage.merge().dataset_name().empty() ? services.DefaultName(context.label)
                                                        : stage.merge().dataset_name());
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(nlohmann::json{{"source", "pipeline merge"}, {"inputs", refs}}.dump());
  for (const std::string& ref : refs) request.add_parent_refs(ref);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, registry.RegisterDataset(request));
  context.Report(static_cast<double>(refs.size()), static_cast<double>(refs.size()), "datasets",
                 absl::StrCat(layout.demos.size(), " demos, registered ", dataset.name(), ":v", dataset.version()));
  return StageOutputs{{"dataset", dataset.id()}};
}

}  // namespace

StageKind MergeStageKind() {
  StageKind kind;
  kind.name = "merge";
  kind.params = v1::MergeStage::descriptor();
  kind.outputs = {"dataset"};
  kind.run = RunMerge;
  return kind;
}

}  // namespace roboloop::pipeline
