#include "sim/experts/pendulum_expert.h"

#include <cmath>
#include <vector>

#include "common/status.h"
#include "sim/experts/lqr.h"
#include "sim/experts/row_policy.h"

namespace roboloop::sim {
namespace {

// The LQR takes over within this angle of upright (the torque limit can hold ≈ 0.42 rad).
constexpr double kCatchAngle = 0.3;
// Energy-pumping gain (N m per J·rad/s); large, so pumping is nearly bang-bang.
constexpr double kEnergyGain = 20.0;
// At rest at the bottom pumping yields nothing; kick instead.
constexpr double kRestSpeed = 1e-3;

class PendulumExpert : public RowPolicy {
 public:
  PendulumExpert(const Task& task, std::vector<double> gain, SwingingBody pole)
      : RowPolicy(task, task.name() + "-expert"),
        gain_(std::move(gain)),
        pole_(pole),
        gravity_(std::abs(task.model()->opt.gravity[2])) {}

 protected:
  void ActRow(const float* obs, float* action) const override {
    const double theta = std::atan2(obs[1], obs[0]);
    const double theta_dot = obs[2];
    if (std::abs(theta) < kCatchAngle) {
      action[0] = Clip(0, -(gain_[0] * theta + gain_[1] * theta_dot));
      return;
    }
    if (std::abs(theta_dot) < kRestSpeed) {
      action[0] = Clip(0, action_spec().high[0]);
      return;
    }
    // dE/dt = τ·θ̇: push with the motion while below the upright energy, against it above.
    const double energy = 0.5 * pole_.inertia * theta_dot * theta_dot +
                          pole_.mass * gravity_ * pole_.com_distance * (std::cos(theta) - 1.0);
    action[0] = Clip(0, -kEnergyGain * energy * theta_dot);
  }

 private:
  std::vector<double> gain_;
  SwingingBody pole_;
  double gravity_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakePendulumExpert(const Task& task) {
  const mjModel* m = task.model();
  ROBOLOOP_ASSIGN_OR_RETURN(int pole, FindId(m, mjOBJ_BODY, "body", "pole", task.name()));
  if (m->nq != 1 || m->nu != 1) {
    return absl::InvalidArgumentError("pendulum expert: the model must have 1 joint and 1 actuator");
  }
  LqrProblem problem;
  problem.qpos = {0.0};
  problem.substeps = task.control_substeps();
  problem.q_diag = {10.0, 1.0};
  problem.r_diag = {0.1};
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<double> gain, ComputeLqrGain(m, problem));
  return std::unique_ptr<Policy>(new PendulumExpert(task, std::move(gain), ReadSwingingBody(m, pole)));
}

}  // namespace roboloop::sim
