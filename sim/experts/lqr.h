// Discrete-time LQR around an equilibrium of a MuJoCo model, linearised with
// mjd_transitionFD, for controls held over an env step of several physics substeps.
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

#include "absl/status/statusor.h"

namespace roboloop::sim {

// Cost weights and operating point of an LQR design.
struct LqrProblem {
  std::vector<double> qpos;      // equilibrium joint positions (nq); velocities are zero
  int substeps = 1;              // physics steps per control step
  std::vector<double> q_diag;    // state cost diagonal (2·nv: positions then velocities)
  std::vector<double> r_diag;    // control cost diagonal (nu)
};

// Feedback gain K (nu × 2·nv, row-major) minimising the LQR cost; u = −K·(s − s_eq) with
// s = [qpos − qpos_eq, qvel]. Models with actuator activations are refused.
absl::StatusOr<std::vector<double>> ComputeLqrGain(const mjModel* m, const LqrProblem& problem);

}  // namespace roboloop::sim
