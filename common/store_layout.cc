#include "common/store_layout.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/fs.h"

namespace roboloop {

std::string StoreLayout::RegistryCatalog() const { return JoinPath(root_, "catalog.db"); }
std::string StoreLayout::RegistryBlobs() const { return JoinPath(root_, "blobs"); }
std::string StoreLayout::Leaderboard() const { return JoinPath(root_, "eval/leaderboard.db"); }
std::string StoreLayout::PipelineRuns() const { return JoinPath(root_, "pipeline/runs.db"); }
std::string StoreLayout::PipelineRunDir(const std::string& run_id) const {
  return JoinPath(root_, absl::StrCat("pipeline/runs/", run_id));
}
std::string StoreLayout::TrainingRunDir(const std::string& run_id) const {
  return JoinPath(root_, absl::StrCat("runs/", run_id));
}
std::string StoreLayout::DatasetCache() const { return JoinPath(root_, "cache/datasets"); }
std::string StoreLayout::PolicyCache() const { return JoinPath(root_, "cache/policies"); }
std::string StoreLayout::ServiceDatasets() const { return JoinPath(root_, "datasets"); }
std::string StoreLayout::Sockets() const { return JoinPath(root_, "run"); }
std::string StoreLayout::EmbeddedSocket(const std::string& service) const {
  return absl::StrCat("unix:", JoinPath(Sockets(), absl::StrCat(service, "-", getpid(), ".sock")));
}

}  // namespace roboloop
