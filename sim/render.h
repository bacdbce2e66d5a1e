// PNG frames of recorded MuJoCo states (docs/architecture.md §4, docs/vision.md "Rendering"): the
// external view reports animate episodes with, and a task's camera observations as its policy
// saw them. Identical states give identical pixels on one GL backend.
#pragma once

#include <mujoco/mujoco.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Size of the external view's frames (the default is MuJoCo's default offscreen buffer).
struct RenderOptions {
  int width = 640;   // at most the model's vis.global.offwidth
  int height = 480;  // at most the model's vis.global.offheight
};

// PNG frames of an episode from its recorded physics states (sim/physics_state.h layout,
// PhysicsStateSize doubles per step, as in Trajectory::states), seen from a free camera
// framing the model in studio light (CameraRenderer::Options::studio): at most `max_frames`,
// evenly spaced, the first and the last state included. InvalidArgument for a ragged state
// array or a size beyond the model's offscreen buffer; GL errors as CameraRenderer::Create.
absl::StatusOr<std::vector<std::string>> RenderStatesAsPng(const mjModel* model, const std::vector<double>& states,
                                                           int max_frames, RenderOptions options);

// PNG frames of `task`'s camera observation `camera` (a CameraSpec name of its ObsSpec) for
// recorded physics states, picked as RenderStatesAsPng picks them: exactly the pixels the
// policy saw in those states (on the same GL backend). NotFound naming the task and its
// cameras for an unknown camera; InvalidArgument for a ragged state array.
absl::StatusOr<std::vector<std::string>> RenderCameraStatesAsPng(const Task& task, const std::string& camera,
                                                                 const std::vector<double>& states,
                                                                 int max_frames);

}  // namespace roboloop::sim
