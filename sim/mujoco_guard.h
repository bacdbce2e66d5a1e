// Safe boundary around MuJoCo (docs/architecture.md §7): its error handler is a process-wide
// function pointer whose default exits the process, so roboloop installs handlers that turn
// errors into absl::Status and keeps warnings out of stdout and MUJOCO_LOG.TXT.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <mujoco/mujoco.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roboloop::sim {

// Deletes an mjModel with mj_deleteModel.
struct ModelDeleter {
  void operator()(mjModel* model) const { mj_deleteModel(model); }
};
// Deletes an mjData with mj_deleteData.
struct DataDeleter {
  void operator()(mjData* data) const { mj_deleteData(data); }
};
using ModelPtr = std::unique_ptr<mjModel, ModelDeleter>;
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

// Installs roboloop's mju_user_error / mju_user_warning handlers once per process.
// Thread-safe; every function in this header calls it, so callers rarely need to.
void InstallMujocoHandlers();

// Runs `fn` (any callable) and converts a MuJoCo error raised inside it into an
// Internal status naming `what`. `fn` must not allocate resources it cannot release when
// MuJoCo unwinds out of it. Thread-safe (the handler raises on the calling thread).
template <typename Fn>
absl::Status GuardMujoco(const std::string& what, Fn&& fn);

// Compiles the MJCF file at `path`; a failure reports MuJoCo's message and the path.
absl::StatusOr<ModelPtr> LoadModelFromFile(const std::string& path);

// Compiles MJCF held in memory (`xml`), named `name` in messages (plugins ship inline XML).
absl::StatusOr<ModelPtr> LoadModelFromString(const std::string& name, const std::string& xml);

// Allocates an mjData for `model`, reporting MuJoCo errors as a status.
absl::StatusOr<DataPtr> MakeData(const mjModel* model);

namespace internal {
// Thrown by the installed mju_user_error handler; caught by GuardMujoco.
struct MujocoError {
  std::string message;
};
// The Internal status GuardMujoco returns for `error` raised while doing `what`.
absl::Status MujocoErrorStatus(const std::string& what, const MujocoError& error);
}  // namespace internal

// Runs `fn` with roboloop's MuJoCo error handlers installed: a MuJoCo error raised inside it
// becomes an Internal status naming `what` (the model, task or call) instead of ending the
// process; OK when `fn` returns normally.
template <typename Fn>
absl::Status GuardMujoco(const std::string& what, Fn&& fn) {
  InstallMujocoHandlers();
  try {
    std::forward<Fn>(fn)();
  } catch (const internal::MujocoError& error) {
    return internal::MujocoErrorStatus(what, error);
  }
  return absl::OkStatus();
}

}  // namespace roboloop::sim
