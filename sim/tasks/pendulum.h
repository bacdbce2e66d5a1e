// pendulum-swingup (issue 4, req 3), on configs/tasks/models/pendulum.xml.
//   observation: orientation = [cos θ, sin θ], velocity = [θ̇] (θ = 0 upright)
//   action: torque in [-2, 2] N m, below the static gravity torque (≈ 4.9 N m): it must pump
//   50 Hz (2 substeps of 10 ms); 500 steps; starts hanging, θ = π ± 0.05, at rest
//   success = |θ| < 0.2 rad at each of the final 100 steps; no termination
//   reward: (1 + cos θ)/2 − 0.001·u²
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Builds pendulum-swingup from the MJCF at `model_path`.
absl::StatusOr<std::unique_ptr<Task>> MakePendulumTask(const std::string& model_path);

}  // namespace roboloop::sim
