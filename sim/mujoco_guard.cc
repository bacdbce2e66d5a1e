#include "sim/mujoco_guard.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace roboloop::sim {
namespace {

// MuJoCo calls this where it would otherwise exit; unwinding back to GuardMujoco is the
// only way out because MuJoCo's callers assume the handler does not return.
void RaiseMujocoError(const char* message) { throw internal::MujocoError{message}; }

// Warnings are also counted per mjData (d->warning), which is what callers check.
void LogMujocoWarning(const char* message) { spdlog::debug("mujoco warning: {}", message); }

constexpr int kErrorBufferSize = 1024;

}  // namespace

void InstallMujocoHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    mju_user_error = &RaiseMujocoError;
    mju_user_warning = &LogMujocoWarning;
  });
}

namespace internal {
absl::Status MujocoErrorStatus(const std::string& what, const MujocoError& error) {
  return absl::InternalError(absl::StrCat(what, ": MuJoCo error: ", error.message));
}
}  // namespace internal

absl::StatusOr<ModelPtr> LoadModelFromFile(const std::string& path) {
  char error[kErrorBufferSize] = "";
  ModelPtr model;
  absl::Status status = GuardMujoco(
      path, [&] { model.reset(mj_loadXML(path.c_str(), nullptr, error, sizeof(error))); });
  if (!status.ok()) return status;
  if (model == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("MJCF ", path, " failed to compile: ", error));
  }
  return model;
}

absl::StatusOr<ModelPtr> LoadModelFromString(const std::string& name, const std::string& xml) {
  auto vfs = std::make_unique<mjVFS>();
  mj_defaultVFS(vfs.get());
  const std::string file = name + ".xml";
  if (mj_addBufferVFS(vfs.get(), file.c_str(), xml.data(), static_cast<int>(xml.size())) != 0) {
    mj_deleteVFS(vfs.get());
    return absl::InvalidArgumentError(absl::StrCat("MJCF ", name, ": cannot stage it in memory"));
  }
  char error[kErrorBufferSize] = "";
  ModelPtr model;
  absl::Status status = GuardMujoco(
      name, [&] { model.reset(mj_loadXML(file.c_str(), vfs.get(), error, sizeof(error))); });
  mj_deleteVFS(vfs.get());
  if (!status.ok()) return status;
  if (model == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("MJCF ", name, " failed to compile: ", error));
  }
  return model;
}

absl::StatusOr<DataPtr> MakeData(const mjModel* model) {
  DataPtr data;
  absl::Status status = GuardMujoco("mj_makeData", [&] { data.reset(mj_makeData(model)); });
  if (!status.ok()) return status;
  if (data == nullptr) return absl::ResourceExhaustedError("mj_makeData returned no data");
  return data;
}

}  // namespace roboloop::sim
