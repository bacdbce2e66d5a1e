// Part (b) of the simulation benchmark (issue 4, req 11b): cartpole-swingup and reacher driven
// by a batched MLP policy (hidden 256×2, seeded random weights, through the torch boundary) at
// 256 envs, against MuJoCo's own rollout (`mujoco.rollout`, same libmujoco) on the same model
// file doing the same physics steps over the same threads, alternating runs; also the share of
// wall time spent in inference.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/bench_stats.h"

namespace roboloop::bench {

// Options of part (b).
struct SimPolicyBenchOptions {
  int runs = 5;                  // alternating runs of each side
  int threads = 2;               // physics threads of our pool and of the anchor
  int envs = 256;                // envs of our pool (one episode each)
  int hidden = 256;              // width of both hidden layers
  int max_steps = 0;             // env steps per episode; 0 = the task's horizon
  double control_noise = 0.01;   // testspeed's control noise
  bool overlap_inference = false;  // our pool runs the policy on one half while stepping the other
  std::vector<std::string> tasks = {"cartpole-swingup", "reacher"};
  std::string python = DefaultPeerPython();  // interpreter of the anchor (mujoco.rollout)
  std::string scratch_dir = "/tmp";  // where the MLP file is written
};

// Runs part (b) and prints, per task, physics steps/s of both sides, the ratio (median and
// min–max) and the inference share, then the machine settings. InvalidArgument for bad
// options; errors when the anchor or the torch library cannot be run.
absl::Status RunSimPolicyBench(const SimPolicyBenchOptions& options);

}  // namespace roboloop::bench
