// The explicit task registry (docs/architecture.md §5): filled by RegisterBuiltins(), plugins and
// YAML files; duplicates are rejected and an unknown name lists the known ones.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sim/task.h"

namespace roboloop::sim {

// Builds a fresh task (compiles its model). Called once per Create.
using TaskFactory = std::function<absl::StatusOr<std::unique_ptr<Task>>()>;

// Name → factory. Thread-safe: all methods may be called concurrently.
class TaskRegistry {
 public:
  // Adds `name` with a one-line `summary`; AlreadyExists if the name is taken,
  // InvalidArgument if it cannot be a dataset name (CheckDatasetName).
  absl::Status Register(const std::string& name, const std::string& summary,
                        TaskFactory factory);
  // Builds the task `name`; NotFound listing the known names when it is unknown; the
  // factory's error, or InvalidArgument when an observation or camera name cannot be a dataset
  // key (ValidateObsSpecNames) or the task's cameras do not fit its model (ValidateTaskCameras).
  absl::StatusOr<std::unique_ptr<Task>> Create(const std::string& name) const;
  // True when `name` is registered.
  bool Contains(const std::string& name) const;
  // Registered names, sorted.
  std::vector<std::string> Names() const;
  // The summary given at registration, or NotFound.
  absl::StatusOr<std::string> Summary(const std::string& name) const;

 private:
  struct Entry {
    std::string summary;
    TaskFactory factory;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roboloop::sim
