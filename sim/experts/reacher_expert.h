// Scripted reacher expert: analytic inverse kinematics of the 2-link arm (the elbow
// solution nearer the current elbow angle) and a joint-space PD controller towards it.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// An expert for reacher; link lengths are read from the task's model (body "link2",
// site "fingertip"). Specs are copied from `task`.
absl::StatusOr<std::unique_ptr<Policy>> MakeReacherExpert(const Task& task);

}  // namespace roboloop::sim
