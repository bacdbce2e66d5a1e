#include "common/store_layout.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/ids.h"

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

bool StoreLayout::IsEmbeddedAddress(const std::string& address) const {
  constexpr absl::string_view kUnix = "unix:";
  return absl::StartsWith(address, kUnix) && PathIsWithin(address.substr(kUnix.size()), Sockets());
}

int StoreLayout::RemoveStaleSockets() const {
  absl::StatusOr<std::vector<std::string>> names = ListDir(Sockets());
  if (!names.ok()) return 0;
  int removed = 0;
  for (const std::string& name : *names) {
    const size_t dash = name.rfind('-');
    int64_t pid = 0;
    if (dash == std::string::npos || !absl::EndsWith(name, ".sock") ||
        !absl::SimpleAtoi(name.substr(dash + 1, name.size() - dash - 1 - 5), &pid)) {
      continue;
    }
    if (ProcessIsGone(ProcessIdentity{pid, 0, HostName()}) && RemoveFile(JoinPath(Sockets(), name)).ok()) ++removed;
  }
  return removed;
}

}  // namespace roboloop
