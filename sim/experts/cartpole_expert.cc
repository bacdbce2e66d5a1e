#include "sim/experts/cartpole_expert.h"

#include <cmath>
#include <vector>

#include "common/status.h"
#include "sim/experts/lqr.h"
#include "sim/experts/row_policy.h"

namespace roboloop::sim {
namespace {

// Hand-over to the LQR once the pole is within this angle of upright.
constexpr double kCatchAngle = 0.4;
// Energy-pumping gain (normalised force per J·rad/s) and cart centring gains.
constexpr double kEnergyGain = 8.0;
constexpr double kCentreGain = 0.15;
constexpr double kCentreDamping = 0.2;

class CartpoleExpert : public RowPolicy {
 public:
  CartpoleExpert(const Task& task, bool swing_up, std::vector<double> gain, SwingingBody pole)
      : RowPolicy(task, task.name() + "-expert"),
        swing_up_(swing_up),
        gain_(std::move(gain)),
        pole_(pole),
        gravity_(std::abs(task.model()->opt.gravity[2])) {}

 protected:
  void ActRow(const float* obs, float* action) const override {
    const double x = obs[0], theta = std::atan2(obs[2], obs[1]);
    const double x_dot = obs[3], theta_dot = obs[4];
    if (!swing_up_ || std::abs(theta) < kCatchAngle) {
      // State order of the gain: qpos (slider, hinge) then qvel (slider, hinge).
      action[0] = Clip(0, -(gain_[0] * x + gain_[1] * theta + gain_[2] * x_dot + gain_[3] * theta_dot));
      return;
    }
    // Energy relative to resting upright; dE/dt = −m·l·a·θ̇·cos θ, so a ∝ E·θ̇·cos θ drives E to 0.
    const double energy = 0.5 * pole_.inertia * theta_dot * theta_dot +
                          pole_.mass * gravity_ * pole_.com_distance * (std::cos(theta) - 1.0);
    const double pump = kEnergyGain * energy * theta_dot * std::cos(theta);
    action[0] = Clip(0, pump - kCentreGain * x - kCentreDamping * x_dot);
  }

 private:
  bool swing_up_;
  std::vector<double> gain_;
  SwingingBody pole_;
  double gravity_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakeCartpoleExpert(const Task& task, bool swing_up) {
  const mjModel* m = task.model();
  ROBOLOOP_ASSIGN_OR_RETURN(int pole, FindId(m, mjOBJ_BODY, "body", "pole", task.name()));
  if (m->nq != 2 || m->nu != 1) {
    return absl::InvalidArgumentError("cartpole expert: the model must have 2 joints and 1 actuator");
  }
  LqrProblem problem;
  problem.qpos = {0.0, 0.0};
  problem.substeps = task.control_substeps();
  problem.q_diag = {1.0, 20.0, 0.5, 1.0};
  problem.r_diag = {1.0};
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<double> gain, ComputeLqrGain(m, problem));
  return std::unique_ptr<Policy>(
      new CartpoleExpert(task, swing_up, std::move(gain), ReadSwingingBody(m, pole)));
}

}  // namespace roboloop::sim
