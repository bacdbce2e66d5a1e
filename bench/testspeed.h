// The anchor of the simulation benchmarks: running MuJoCo's `mujoco-testspeed`, plus the
// printing both parts share.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::bench {

// Runs `testspeed MODEL STEPS THREADS NOISE` once and returns its all-thread physics steps per
// second; errors quote the command and its output.
absl::StatusOr<double> RunTestspeed(const std::string& testspeed, const std::string& model, int physics_steps,
                                    int threads, double control_noise);

// /proc/loadavg's first three fields: on a shared machine, what else was running.
std::string LoadAverage();

// One aligned line: `label` and the median, min and max of `values`.
void PrintSide(const char* label, const std::vector<double>& values);

}  // namespace roboloop::bench
