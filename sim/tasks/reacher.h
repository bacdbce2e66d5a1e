// reacher (issue 4, req 3), on configs/tasks/models/reacher.xml: a 2-link planar arm.
//   observation: arm = [cos q1, sin q1, cos q2, sin q2], velocity = [q̇1, q̇2],
//                fingertip = [x, y], target = [x, y]
//   action: two joint torques in [-1, 1] (×0.1 N m); 50 Hz (2 substeps of 10 ms); 200 steps
//   reset: shoulder uniform in ±π, elbow in ±2.5 rad; target uniform (by area) over the
//          reachable annulus 0.05 m ≤ r ≤ 0.21 m, stored as the mocap body "target"
//   success = fingertip within 0.02 m of the target at each of the final 20 steps
//   reward: −distance − 0.001·|u|²; no termination
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Inner and outer radius of the reacher's target annulus, in metres.
inline constexpr double kReacherMinRadius = 0.05;
inline constexpr double kReacherMaxRadius = 0.21;

// Builds reacher from the MJCF at `model_path`.
absl::StatusOr<std::unique_ptr<Task>> MakeReacherTask(const std::string& model_path);

}  // namespace roboloop::sim
