// The anchor of the simulation benchmarks: MuJoCo's own multithreaded C++ rollout
// (`mujoco.rollout` of the pinned wheel, the same libmujoco as ours) run by
// bench/peers/mujoco_rollout_peer.py, plus the printing both parts share.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::bench {

// How one anchor run is asked for: `trajectories` open-loop trajectories of `physics_steps` steps
// of `model` on `threads` threads, with testspeed's control noise (a fraction of the range).
struct AnchorRun {
  std::string python;    // interpreter with the pinned mujoco wheel
  std::string model;     // MJCF path
  int physics_steps = 0;  // per trajectory
  int threads = 1;
  double control_noise = 0;
  int trajectories = 1;
};

// Runs the anchor once and returns its physics steps per second over all trajectories (only the
// rollout call is timed); errors quote the command and its output.
absl::StatusOr<double> RunMujocoRollout(const AnchorRun& run);

// /proc/loadavg's first three fields: on a shared machine, what else was running.
std::string LoadAverage();

// One aligned line: `label` and the median, min and max of `values`.
void PrintSide(const char* label, const std::vector<double>& values);

}  // namespace roboloop::bench
