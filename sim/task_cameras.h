// Checking a task's camera observations against its model at load time (docs/vision.md
// "Cameras in tasks"): every task factory (C++, YAML, plug-in) prepares its definition with
// PrepareTaskCameras, and TaskRegistry::Create checks every task it builds.
#pragma once

#include <mujoco/mujoco.h>

#include <string>

#include "absl/status/status.h"
#include "sim/spec.h"
#include "sim/task.h"

namespace roboloop::sim {

// OK when `camera` has a name and a size in 1..kMaxCameraSide (ValidateCameraSize) and its
// `camera` is "" or an MJCF camera of `model`; otherwise InvalidArgument naming `who`, the
// camera and what is wrong (an unknown MJCF camera lists the model's cameras).
absl::Status CheckCamera(const mjModel* model, const CameraSpec& camera, const std::string& who);

// CheckCamera for each camera of `spec`, names unique among its float keys, its cameras and
// the cameras' dataset keys (CameraImageKey), and each camera within the model's offscreen
// buffer (vis.global.offwidth x offheight). InvalidArgument naming `who` and the camera.
absl::Status ValidateTaskCameras(const mjModel* model, const ObsSpec& spec, const std::string& who);

// Enlarges `model`'s offscreen buffer to hold every camera of `spec` (never shrinks it).
void FitOffscreenBuffer(const ObsSpec& spec, mjModel* model);

// What every task factory runs on its definition before building the task: fits the model's
// offscreen buffer to the cameras, then ValidateTaskCameras with `who` (e.g. "task push-vision"
// or "YAML task <file> (task <name>)"). OK for tasks without cameras.
absl::Status PrepareTaskCameras(TaskDefinition* def, const std::string& who);

}  // namespace roboloop::sim
