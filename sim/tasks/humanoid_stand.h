// humanoid-stand (issue 4, req 3) on Gymnasium's humanoid model (throughput task, no expert).
//   observation: qpos [nq], qvel [nv]; action: the model's actuator control ranges
//   50 Hz (4 substeps of 5 ms); 500 steps; starts from the model's default standing pose
//   (Debian's 2.2.2 model ships no keyframe) with ±0.01 uniform noise on non-root joints
//   success = head height > 1.2 m at the last step; no termination
//   reward: head height + 0.1 (alive) − 0.01·|u|²
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Builds humanoid-stand from the MJCF at `model_path` (geom "head" and a root free joint).
absl::StatusOr<std::unique_ptr<Task>> MakeHumanoidStandTask(const std::string& model_path);

}  // namespace roboloop::sim
