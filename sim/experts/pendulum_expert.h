// Scripted pendulum swing-up expert: energy pumping at the torque limit, then an LQR
// (designed on the task's model) once the pendulum is near upright.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// An expert for pendulum-swingup (one hinge, body "pole"). Specs are copied from `task`.
absl::StatusOr<std::unique_ptr<Policy>> MakePendulumExpert(const Task& task);

}  // namespace roboloop::sim
