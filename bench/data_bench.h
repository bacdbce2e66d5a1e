// The dataset benchmark (issue 3, req 8): write then load E episodes × T steps × (obs O,
// action A) float32 through data/, against `cp` + `sha256sum` of a raw file of the same bytes.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace roboloop::bench {

struct DataBenchOptions {
  int episodes = 1000;   // demos written and loaded
  int steps = 200;       // steps per demo
  int obs_dim = 32;      // floats of obs/state per step
  int action_dim = 8;    // floats of actions per step
  int runs = 5;          // alternating runs per side
  std::string work_dir;  // scratch folder (default: a new one under /tmp)
};

// Runs the benchmark and prints figures and settings to stdout.
absl::Status RunDataBench(const DataBenchOptions& options);

}  // namespace roboloop::bench
