// Shared arithmetic and reporting for benchmarks that run our code and an anchor side by side.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roboloop::bench {

// Median, min and max of a sample.
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
};

// Summarises `values` (must be non-empty).
Summary Summarize(std::vector<double> values);

// The q-quantile (0..1) of `values` by nearest rank (must be non-empty).
double Quantile(std::vector<double> values, double q);

// Seconds of steady-clock time since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);

// The scratch folder of a benchmark run: `requested` (created if missing) or, when empty, a
// new folder /tmp/<prefix>-XXXXXX.
absl::StatusOr<std::string> MakeScratchDir(const std::string& requested, const std::string& prefix);

// Removes `dir` and everything in it when the benchmark created it (`requested` was empty).
void RemoveScratchDir(const std::string& dir, const std::string& requested);

// The environment's entries that move the numbers (OMP_*, GOMP_*, OPENBLAS_*, MKL_* and GRPC_*
// variables) as "NAME=value" separated by spaces, in the environment's order, or a note saying
// there are none.
std::string SettingVariables();

// Lines describing what moves the numbers: CPU model, cores, OMP_*/GOMP_*/OPENBLAS_*/MKL_*/GRPC_*
// variables.
std::string MachineSettings();

// The interpreter of the project's Python environment (python/pins.txt), which runs the peers.
std::string DefaultPeerPython();

}  // namespace roboloop::bench
