// The simulation benchmark (issue 4, req 11): our env pool against MuJoCo's own
// `mujoco-testspeed` on the same model, alternating runs, median of the ratio with min–max.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop::bench {

// Options of the simulation benchmark.
struct SimBenchOptions {
  int runs = 5;              // alternating runs of each side
  int threads = 2;           // physics threads of our pool and of testspeed
  int envs = 64;             // envs of our pool, all stepped for the whole run
  int env_steps = 1000;      // env steps per env (physics steps = this × control substeps)
  double control_noise = 0.01;  // control noise as a fraction of the control range
  std::string testspeed = "/usr/bin/mujoco-testspeed";                       // the anchor
  std::string humanoid_model = "/usr/share/mujoco/model/humanoid/humanoid.xml";  // Debian's
};

// Runs part (a) of the benchmark and prints physics steps/s of both sides, the ratio and
// the machine settings to stdout. InvalidArgument for bad options; an error when the anchor
// cannot be run or parsed, or when an episode of ours ends before the horizon (a reset
// would distort the comparison).
absl::Status RunSimBench(const SimBenchOptions& options);

}  // namespace roboloop::bench
