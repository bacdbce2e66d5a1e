// The simulation benchmark (issue 4, req 11; issue 21, req 6): our env pool against MuJoCo's own
// multithreaded rollout (`mujoco.rollout`, same libmujoco) on the same model, threads and steps,
// alternating runs, median of the ratio with min–max.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "bench/bench_stats.h"
#include "sim/builtin_tasks.h"

namespace roboloop::bench {

// Options of the simulation benchmark.
struct SimBenchOptions {
  int runs = 5;              // alternating runs of each side
  int threads = 2;           // physics threads of our pool and of the anchor
  int envs = 64;             // envs of our pool, all stepped for the whole run
  int env_steps = 1000;      // env steps per env (physics steps = this × control substeps)
  double control_noise = 0.01;  // control noise as a fraction of the control range
  std::string python = DefaultPeerPython();  // interpreter of the anchor (mujoco.rollout)
  std::string humanoid_model = sim::BuiltinTaskOptions::DefaultHumanoidModel();  // Gymnasium's
};

// Runs part (a) of the benchmark and prints physics steps/s of both sides, the ratio and
// the machine settings to stdout. InvalidArgument for bad options; an error when the anchor
// cannot be run or parsed, or when an episode of ours ends before the horizon (a reset
// would distort the comparison).
absl::Status RunSimBench(const SimBenchOptions& options);

}  // namespace roboloop::bench
