// Robustness options (issue 4, req 4): perturbations every task accepts, all drawn from the
// episode's seed so that they are part of the evaluation protocol.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"
#include "sim/spec.h"

namespace roboloop::sim {

// A closed multiplicative range [low, high]; {1, 1} means "unchanged".
struct ScaleRange {
  double low = 1.0;   // smallest factor
  double high = 1.0;  // largest factor

  // True when the range changes nothing.
  bool identity() const { return low == 1.0 && high == 1.0; }
};

// Perturbations applied by an env on top of the task.
struct RobustnessOptions {
  std::map<std::string, double> obs_noise_std;  // Gaussian std per observation key
  double action_noise_std = 0.0;   // Gaussian std added to every action dimension
  int action_delay = 0;            // actions take effect this many env steps late
  ScaleRange body_mass;            // per-episode factor on each body's mass
  ScaleRange geom_friction;        // per-episode factor on each geom's sliding friction
  ScaleRange actuator_gain;        // per-episode factor on each actuator's gain

  // True when some model parameter is randomised (envs then need their own model copy).
  bool randomises_model() const {
    return !body_mass.identity() || !geom_friction.identity() || !actuator_gain.identity();
  }
};

// OK when `options` fit `obs` (noise keys exist, stds and delay non-negative, ranges
// positive and ordered); otherwise InvalidArgument naming the bad field.
absl::Status ValidateRobustness(const RobustnessOptions& options, const ObsSpec& obs);

}  // namespace roboloop::sim
