// push (issue 4, req 3), on configs/tasks/models/push.xml: a planar pusher moves a block.
//   observation: pusher = [x, y], pusher_velocity = [ẋ, ẏ], block = [x, y],
//                block_velocity = [ẋ, ẏ], goal = [x, y]
//   action: two pusher forces in [-1, 1] (×0.5 N); 50 Hz (4 substeps of 5 ms); 400 steps
//   reset: block start and goal uniform in the square workspace |x|, |y| ≤ 0.15 m, redrawn
//          until at least 0.1 m apart; pusher uniform in |x|, |y| ≤ 0.2 m, redrawn until at
//          least 0.08 m from the block's centre; the goal is the mocap body "goal"
//   success = block centre within 0.05 m of the goal at the last step
//   reward: −|block − goal| − 0.1·|pusher − block|
//   termination: the block's centre leaves the 0.6 m × 0.6 m table
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Half-width of the square where push samples the block start and the goal, in metres.
inline constexpr double kPushWorkspaceHalfWidth = 0.15;
// Least distance between push's block start and goal, in metres.
inline constexpr double kPushMinGoalDistance = 0.1;
// Half-width of the square where push samples the pusher start, in metres.
inline constexpr double kPushPusherHalfWidth = 0.2;
// Least distance between push's pusher start and the block's centre, in metres.
inline constexpr double kPushMinPusherDistance = 0.08;
// Largest block-to-goal distance that counts as success at the last step, in metres.
inline constexpr double kPushSuccessDistance = 0.05;
// Half-width of the table; the episode terminates when the block's centre leaves it.
inline constexpr double kPushTableHalfWidth = 0.3;

// Builds push from the MJCF at `model_path`.
absl::StatusOr<std::unique_ptr<Task>> MakePushTask(const std::string& model_path);

}  // namespace roboloop::sim
