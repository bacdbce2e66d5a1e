#include "sim/experts/reach_vision_expert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::sim {
namespace {

// Speed per metre to the target (1/s) and the speed limit (m/s).
constexpr double kPositionGain = 5.0;
constexpr double kMaxSpeed = 0.4;
// Force per m/s of velocity error, in N s/m.
constexpr double kVelocityGain = 1.0;

class ReachVisionExpert : public Policy {
 public:
  ReachVisionExpert(const Task& task, double damping, double gear)
      : name_(task.name() + "-expert"),
        obs_spec_(task.obs_spec()),
        action_spec_(task.action_spec()),
        damping_(damping),
        gear_(gear) {}

  std::string name() const override { return name_; }
  const ObsSpec& obs_spec() const override { return obs_spec_; }
  const ActionSpec& action_spec() const override { return action_spec_; }

  // obs: finger [2], finger_velocity [2]; privileged: target [2].
  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    if (batch.privileged == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(name_, " needs the task's privileged state (the target), which the caller did not pass"));
    }
    const int obs_size = obs_spec_.size();
    for (int row = 0; row < batch.batch; ++row) {
      ActRow(batch.obs + static_cast<size_t>(row) * obs_size, batch.privileged + 2 * static_cast<size_t>(row),
             actions + 2 * static_cast<size_t>(row));
    }
    return absl::OkStatus();
  }

 private:
  void ActRow(const float* obs, const float* target, float* action) const {
    double vx = kPositionGain * (target[0] - obs[0]);
    double vy = kPositionGain * (target[1] - obs[1]);
    const double speed = std::hypot(vx, vy);
    if (speed > kMaxSpeed) {
      vx *= kMaxSpeed / speed;
      vy *= kMaxSpeed / speed;
    }
    action[0] = Clip(0, (damping_ * vx + kVelocityGain * (vx - obs[2])) / gear_);
    action[1] = Clip(1, (damping_ * vy + kVelocityGain * (vy - obs[3])) / gear_);
  }

  float Clip(int dim, double value) const {
    return std::clamp(static_cast<float>(value), action_spec_.low[dim], action_spec_.high[dim]);
  }

  std::string name_;
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
  double damping_;
  double gear_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakeReachVisionExpert(const Task& task) {
  const mjModel* m = task.model();
  ROBOLOOP_ASSIGN_OR_RETURN(int joint, FindId(m, mjOBJ_JOINT, "joint", "finger_x", task.name()));
  if (task.privileged_spec().size() != 2 || task.obs_spec().size() != 4 || m->nu != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reach-vision expert: task ", task.name(),
        " must observe finger and finger_velocity, keep the 2-float target privileged and have 2 motors"));
  }
  return std::unique_ptr<Policy>(
      new ReachVisionExpert(task, m->dof_damping[m->jnt_dofadr[joint]], m->actuator_gear[0]));
}

}  // namespace roboloop::sim
