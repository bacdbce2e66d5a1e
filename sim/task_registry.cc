#include "sim/task_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "sim/task_cameras.h"

namespace roboloop::sim {

absl::Status TaskRegistry::Register(const std::string& name, const std::string& summary,
                                    TaskFactory factory) {
  ROBOLOOP_RETURN_IF_ERROR(CheckDatasetName(name, "task name"));
  absl::MutexLock lock(&mu_);
  if (entries_.count(name) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("task '", name, "' is already registered"));
  }
  entries_.emplace(name, Entry{summary, std::move(factory)});
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Task>> TaskRegistry::Create(const std::string& name) const {
  TaskFactory factory;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::vector<std::string> known;
      for (const auto& [known_name, entry] : entries_) known.push_back(known_name);
      return absl::NotFoundError(absl::StrCat("unknown task '", name, "'; known tasks: ",
                                              known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
    }
    factory = it->second.factory;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, factory());
  ROBOLOOP_RETURN_IF_ERROR(ValidateObsSpecNames(task->obs_spec(), absl::StrCat("task ", name)));
  ROBOLOOP_RETURN_IF_ERROR(ValidateTaskCameras(task->model(), task->obs_spec(), absl::StrCat("task ", name)));
  return task;
}

bool TaskRegistry::Contains(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  return entries_.count(name) != 0;
}

std::vector<std::string> TaskRegistry::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

absl::StatusOr<std::string> TaskRegistry::Summary(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("unknown task '", name, "'"));
  return it->second.summary;
}

}  // namespace roboloop::sim
