// Shared arithmetic and reporting for benchmarks that run our code and an anchor side by side.
#pragma once

#include <string>
#include <vector>

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

// Lines describing what moves the numbers: CPU model, cores, OMP_*/OPENBLAS_*/MKL_* variables.
std::string MachineSettings();

}  // namespace roboloop::bench
