// reach-vision (issue 23, req 5), on configs/tasks/models/reach_vision.xml: a task whose goal
// only the camera shows.
//   observation: finger = [x, y], finger_velocity = [ẋ, ẏ]; camera "top" (the MJCF camera
//                looking straight down on the table), 48 x 48 RGB. The target is not in the
//                state: a policy must see it.
//   privileged (the expert's only): target = [x, y]
//   action: two finger forces in [-1, 1] N; 20 Hz (5 substeps of 10 ms); 60 steps
//   reset: finger uniform in |x|, |y| ≤ 0.05 m; target uniform in |x|, |y| ≤ 0.2 m, redrawn
//          until at least 0.1 m from the finger; the target is the mocap body "target"
//   success = finger within 0.05 m of the target for 5 consecutive steps
//   reward: −|finger − target|; no termination
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Half-width of the square where reach-vision samples its target, in metres.
inline constexpr double kReachVisionTargetHalfWidth = 0.2;
// Half-width of the square where reach-vision samples the finger's start, in metres.
inline constexpr double kReachVisionStartHalfWidth = 0.05;
// Least distance between the finger's start and the target, in metres.
inline constexpr double kReachVisionMinTargetDistance = 0.1;
// Largest finger-to-target distance that counts as reaching it, in metres.
inline constexpr double kReachVisionSuccessDistance = 0.05;
// Side of reach-vision's square camera image, in pixels.
inline constexpr int kReachVisionImageSide = 48;

// Builds reach-vision from the MJCF at `model_path`.
absl::StatusOr<std::unique_ptr<Task>> MakeReachVisionTask(const std::string& model_path);

}  // namespace roboloop::sim
