#include "sim/experts/reacher_expert.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "sim/experts/row_policy.h"
#include "sim/tasks/angles.h"

namespace roboloop::sim {
namespace {

// PD gains in normalised torque per rad and per rad/s, per joint: the elbow moves far less
// inertia than the shoulder, and its damping must stay small for a stable 50 Hz loop.
constexpr double kStiffness[2] = {1.0, 1.0};
constexpr double kDamping[2] = {0.27, 0.175};

class ReacherExpert : public RowPolicy {
 public:
  ReacherExpert(const Task& task, double upper, double lower)
      : RowPolicy(task, task.name() + "-expert"), upper_(upper), lower_(lower) {}

 protected:
  // obs: arm [c1 s1 c2 s2], velocity [2], fingertip [2], target [2].
  void ActRow(const float* obs, float* action) const override {
    const double q1 = std::atan2(obs[1], obs[0]);
    const double q2 = std::atan2(obs[3], obs[2]);
    const double x = obs[8], y = obs[9];
    const double cos_elbow = std::clamp(
        (x * x + y * y - upper_ * upper_ - lower_ * lower_) / (2 * upper_ * lower_), -1.0, 1.0);
    const double elbow = std::acos(cos_elbow);
    const double goal2 = q2 >= 0 ? elbow : -elbow;
    const double goal1 = std::atan2(y, x) - std::atan2(lower_ * std::sin(goal2),
                                                       upper_ + lower_ * std::cos(goal2));
    action[0] = Clip(0, kStiffness[0] * WrapAngle(goal1 - q1) - kDamping[0] * obs[4]);
    action[1] = Clip(1, kStiffness[1] * (goal2 - q2) - kDamping[1] * obs[5]);
  }

 private:
  double upper_;
  double lower_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakeReacherExpert(const Task& task) {
  const mjModel* m = task.model();
  ROBOLOOP_ASSIGN_OR_RETURN(int link2, FindId(m, mjOBJ_BODY, "body", "link2", task.name()));
  ROBOLOOP_ASSIGN_OR_RETURN(int tip, FindId(m, mjOBJ_SITE, "site", "fingertip", task.name()));
  const double upper = std::hypot(m->body_pos[3 * link2], m->body_pos[3 * link2 + 1]);
  const double lower = std::hypot(m->site_pos[3 * tip], m->site_pos[3 * tip + 1]);
  return std::unique_ptr<Policy>(new ReacherExpert(task, upper, lower));
}

}  // namespace roboloop::sim
