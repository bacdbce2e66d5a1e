// Scripted push expert: circles the block at a safe radius until the pusher is behind it on
// the goal→block line, then pushes along the block→goal direction (steering the contact
// point back onto that line), slowing near the goal and stopping once the block is there.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// An expert for push; the pusher and block radii (geoms "pusher", "block"), joint damping
// (joints "pusher_x", "block_x") and the motor gear are read from the task's model. Specs
// are copied from `task`.
absl::StatusOr<std::unique_ptr<Policy>> MakePushExpert(const Task& task);

}  // namespace roboloop::sim
