#include "sim/experts/push_expert.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "sim/experts/row_policy.h"
#include "sim/tasks/angles.h"

namespace roboloop::sim {
namespace {

// Gap between the block's and the pusher's surfaces while circling the block, in metres.
constexpr double kOrbitGap = 0.035;
// Largest angle the circling target leads the pusher by, in radians.
constexpr double kOrbitStep = 0.5;
// Pusher angle around the block, from straight behind it, below which the expert pushes.
constexpr double kAlignedAngle = 0.25;
// Surface gap under which the pusher counts as touching the block, in metres.
constexpr double kContactGap = 0.01;
// How far the pushing target lies inside the block's surface, in metres.
constexpr double kPress = 0.002;
// Block-to-goal distance under which the expert stops pushing, in metres.
constexpr double kDoneDistance = 0.01;
// Position gain (1/s), speed limits (m/s) and pushing speed per metre to the goal (1/s).
constexpr double kPositionGain = 8.0;
constexpr double kMaxSpeed = 0.4;
constexpr double kMaxPushSpeed = 0.15;
constexpr double kPushSpeedPerMetre = 1.5;
// Normalised force per m/s of pusher velocity error.
constexpr double kVelocityGain = 5.0;

// A vector of the plane.
struct Vec {
  double x, y;
};
Vec operator+(Vec a, Vec b) { return {a.x + b.x, a.y + b.y}; }
Vec operator-(Vec a, Vec b) { return {a.x - b.x, a.y - b.y}; }
Vec operator*(double k, Vec a) { return {k * a.x, k * a.y}; }
double Norm(Vec a) { return std::hypot(a.x, a.y); }
Vec Polar(double radius, double angle) {
  return {radius * std::cos(angle), radius * std::sin(angle)};
}
// `a` shortened to at most `limit`.
Vec Limit(Vec a, double limit) {
  const double n = Norm(a);
  return n > limit ? (limit / n) * a : a;
}

// Model constants the expert needs.
struct PushModel {
  double contact_radius;   // pusher radius + block radius, m
  double pusher_damping;   // N s/m per pusher joint
  double block_damping;    // N s/m per block joint
  double gear;             // N per unit of control
};

// What the expert commands: a pusher velocity, and whether it is pushing the block.
struct Command {
  Vec velocity{0, 0};    // m/s
  bool pushing = false;  // touching the block from behind and pushing it
};

class PushExpert : public RowPolicy {
 public:
  PushExpert(const Task& task, PushModel model)
      : RowPolicy(task, task.name() + "-expert"), model_(model) {}

 protected:
  // obs: pusher [2], pusher_velocity [2], block [2], block_velocity [2], goal [2].
  void ActRow(const float* obs, float* action) const override {
    const Vec pusher{obs[0], obs[1]}, velocity{obs[2], obs[3]};
    const Vec block{obs[4], obs[5]}, goal{obs[8], obs[9]};
    const Command command =
        Norm(goal - block) > kDoneDistance ? Plan(pusher, block, goal) : Command();
    // Velocity control: feed forward the pusher's and (while pushing) the block's damping.
    const double resistance =
        model_.pusher_damping + (command.pushing ? model_.block_damping : 0.0);
    const Vec force = (resistance / model_.gear) * command.velocity +
                      kVelocityGain * (command.velocity - velocity);
    action[0] = Clip(0, force.x);
    action[1] = Clip(1, force.y);
  }

 private:
  // The command while the block is away from the goal.
  Command Plan(Vec pusher, Vec block, Vec goal) const {
    const double to_goal = Norm(goal - block);
    const Vec direction = (1.0 / to_goal) * (goal - block);
    const Vec relative = pusher - block;
    const double around = std::atan2(relative.y, relative.x);
    const double error = WrapAngle(std::atan2(-direction.y, -direction.x) - around);
    if (std::abs(error) > kAlignedAngle) {
      // Circle the block towards the point behind it, at a radius that keeps clear of it.
      const double angle = around + std::clamp(error, -kOrbitStep, kOrbitStep);
      const Vec target = block + Polar(model_.contact_radius + kOrbitGap, angle);
      return {Limit(kPositionGain * (target - pusher), kMaxSpeed), false};
    }
    // Steer onto the point behind the block and, once touching it, push towards the goal.
    const bool touching = Norm(relative) < model_.contact_radius + kContactGap;
    const double speed = touching ? std::min(kMaxPushSpeed, kPushSpeedPerMetre * to_goal) : 0.0;
    const Vec target = block - (model_.contact_radius - kPress) * direction;
    return {Limit(kPositionGain * (target - pusher), kMaxSpeed) + speed * direction, touching};
  }

  PushModel model_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakePushExpert(const Task& task) {
  const mjModel* m = task.model();
  ROBOLOOP_ASSIGN_OR_RETURN(int pusher, FindId(m, mjOBJ_GEOM, "geom", "pusher", task.name()));
  ROBOLOOP_ASSIGN_OR_RETURN(int block, FindId(m, mjOBJ_GEOM, "geom", "block", task.name()));
  ROBOLOOP_ASSIGN_OR_RETURN(int pusher_x,
                            FindId(m, mjOBJ_JOINT, "joint", "pusher_x", task.name()));
  ROBOLOOP_ASSIGN_OR_RETURN(int block_x, FindId(m, mjOBJ_JOINT, "joint", "block_x", task.name()));
  PushModel model;
  model.contact_radius = m->geom_size[3 * pusher] + m->geom_size[3 * block];
  model.pusher_damping = m->dof_damping[m->jnt_dofadr[pusher_x]];
  model.block_damping = m->dof_damping[m->jnt_dofadr[block_x]];
  model.gear = m->actuator_gear[0];
  if (model.gear <= 0) {
    return absl::InvalidArgumentError("task push: the expert needs a positive motor gear");
  }
  return std::unique_ptr<Policy>(new PushExpert(task, model));
}

}  // namespace roboloop::sim
