// Scripted cartpole expert: LQR around upright (designed on the task's own model), and for
// swing-up an energy-pumping controller that hands over to the LQR near upright.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// An expert for a cartpole task (joints "slider" and "hinge", body "pole"); with
// `swing_up` it first pumps the pole up. Specs are copied; the expert does not keep `task`.
absl::StatusOr<std::unique_ptr<Policy>> MakeCartpoleExpert(const Task& task, bool swing_up);

}  // namespace roboloop::sim
