// Scripted reach-vision expert: reads the target from the task's privileged state (it is not in
// the observation) and drives the finger towards it at a speed proportional to the distance
// (capped), feeding forward the joints' damping.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// An expert for reach-vision; the joint damping (joint "finger_x") and motor gear are read from
// the task's model. Its Act needs PolicyBatch::privileged (FailedPrecondition without it).
absl::StatusOr<std::unique_ptr<Policy>> MakeReachVisionExpert(const Task& task);

}  // namespace roboloop::sim
