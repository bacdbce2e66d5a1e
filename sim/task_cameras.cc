#include "sim/task_cameras.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/camera_renderer.h"

namespace roboloop::sim {

absl::Status CheckCamera(const mjModel* model, const CameraSpec& camera, const std::string& who) {
  ROBOLOOP_RETURN_IF_ERROR(ValidateCameraSize(camera, who));
  if (!camera.camera.empty() && mj_name2id(model, mjOBJ_CAMERA, camera.camera.c_str()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": camera '", camera.name, "' names MJCF camera '",
                                                   camera.camera, "', which the model lacks; its cameras: ",
                                                   ModelCameraNames(model)));
  }
  return absl::OkStatus();
}

absl::Status ValidateTaskCameras(const mjModel* model, const ObsSpec& spec, const std::string& who) {
  std::set<std::string> names;
  for (const ArraySpec& key : spec.keys) names.insert(key.name);
  for (const CameraSpec& camera : spec.cameras) {
    ROBOLOOP_RETURN_IF_ERROR(CheckCamera(model, camera, who));
    for (const std::string& name : {camera.name, CameraImageKey(camera)}) {
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(absl::StrCat(who, ": camera '", camera.name, "': the name '", name,
                                                       "' is taken by another observation"));
      }
    }
    if (camera.width > model->vis.global.offwidth || camera.height > model->vis.global.offheight) {
      return absl::InvalidArgumentError(absl::StrCat(
          who, ": camera '", camera.name, "' ", camera.width, "x", camera.height,
          " exceeds the model's offscreen buffer ", model->vis.global.offwidth, "x", model->vis.global.offheight,
          " (the task factory must call PrepareTaskCameras)"));
    }
  }
  return absl::OkStatus();
}

void FitOffscreenBuffer(const ObsSpec& spec, mjModel* model) {
  for (const CameraSpec& camera : spec.cameras) {
    model->vis.global.offwidth = std::max(model->vis.global.offwidth, camera.width);
    model->vis.global.offheight = std::max(model->vis.global.offheight, camera.height);
  }
}

absl::Status PrepareTaskCameras(TaskDefinition* def, const std::string& who) {
  if (def->obs_spec.cameras.empty()) return absl::OkStatus();
  ROBOLOOP_CHECK(def->model != nullptr);
  FitOffscreenBuffer(def->obs_spec, def->model.get());
  return ValidateTaskCameras(def->model.get(), def->obs_spec, who);
}

}  // namespace roboloop::sim
