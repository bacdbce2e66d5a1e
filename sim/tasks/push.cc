#include "sim/tasks/push.h"

#include <cmath>

#include "common/status.h"
#include "sim/experts/push_expert.h"

namespace roboloop::sim {
namespace {

// Ids of push's named parts.
struct PushParts {
  int pusher_x, pusher_y, block_x, block_y, goal_mocap;
};

// A point of the plane.
struct Point {
  double x, y;
};

// A point uniform in the square |x|, |y| ≤ half_width.
Point UniformInSquare(Rng& rng, double half_width) {
  const double x = rng.Uniform(-half_width, half_width);
  return {x, rng.Uniform(-half_width, half_width)};
}

// A point uniform in the square |x|, |y| ≤ half_width at least `min_distance` from `away`
// (rejection sampling: every draw is kept or redrawn, so the result is uniform).
Point UniformInSquareAwayFrom(Rng& rng, double half_width, Point away, double min_distance) {
  Point p = UniformInSquare(rng, half_width);
  while (std::hypot(p.x - away.x, p.y - away.y) < min_distance) {
    p = UniformInSquare(rng, half_width);
  }
  return p;
}

class PushTask : public Task {
 public:
  PushTask(TaskDefinition def, PushParts parts) : Task(std::move(def)), parts_(parts) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    const Point block = UniformInSquare(rng, kPushWorkspaceHalfWidth);
    const Point goal =
        UniformInSquareAwayFrom(rng, kPushWorkspaceHalfWidth, block, kPushMinGoalDistance);
    const Point pusher =
        UniformInSquareAwayFrom(rng, kPushPusherHalfWidth, block, kPushMinPusherDistance);
    d->qpos[m->jnt_qposadr[parts_.block_x]] = block.x;
    d->qpos[m->jnt_qposadr[parts_.block_y]] = block.y;
    d->qpos[m->jnt_qposadr[parts_.pusher_x]] = pusher.x;
    d->qpos[m->jnt_qposadr[parts_.pusher_y]] = pusher.y;
    mjtNum* target = &d->mocap_pos[3 * parts_.goal_mocap];
    target[0] = goal.x;
    target[1] = goal.y;
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    const mjtNum* goal = &d->mocap_pos[3 * parts_.goal_mocap];
    const double values[] = {Qpos(m, d, parts_.pusher_x), Qpos(m, d, parts_.pusher_y),
                             Qvel(m, d, parts_.pusher_x), Qvel(m, d, parts_.pusher_y),
                             Qpos(m, d, parts_.block_x),  Qpos(m, d, parts_.block_y),
                             Qvel(m, d, parts_.block_x),  Qvel(m, d, parts_.block_y),
                             goal[0],                     goal[1]};
    for (int i = 0; i < 10; ++i) obs[i] = static_cast<float>(values[i]);
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    const double reach = std::hypot(Qpos(m, d, parts_.pusher_x) - Qpos(m, d, parts_.block_x),
                                    Qpos(m, d, parts_.pusher_y) - Qpos(m, d, parts_.block_y));
    return -BlockGoalDistance(m, d) - 0.1 * reach;
  }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return BlockGoalDistance(m, d) < kPushSuccessDistance;
  }

  bool Terminated(const mjModel* m, const mjData* d) const override {
    return std::abs(Qpos(m, d, parts_.block_x)) > kPushTableHalfWidth ||
           std::abs(Qpos(m, d, parts_.block_y)) > kPushTableHalfWidth;
  }

  absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const override {
    return MakePushExpert(*this);
  }

 private:
  static double Qpos(const mjModel* m, const mjData* d, int joint) {
    return d->qpos[m->jnt_qposadr[joint]];
  }
  static double Qvel(const mjModel* m, const mjData* d, int joint) {
    return d->qvel[m->jnt_dofadr[joint]];
  }
  double BlockGoalDistance(const mjModel* m, const mjData* d) const {
    const mjtNum* goal = &d->mocap_pos[3 * parts_.goal_mocap];
    return std::hypot(Qpos(m, d, parts_.block_x) - goal[0], Qpos(m, d, parts_.block_y) - goal[1]);
  }

  PushParts parts_;
};

// Finds the slide joint `name`, or an error naming it when it is missing or not a slide.
absl::StatusOr<int> FindSlideJoint(const mjModel* m, const std::string& name,
                                   const std::string& task) {
  ROBOLOOP_ASSIGN_OR_RETURN(int id, FindId(m, mjOBJ_JOINT, "joint", name, task));
  if (m->jnt_type[id] != mjJNT_SLIDE) {
    return absl::InvalidArgumentError("task " + task + ": joint '" + name + "' must be a slide");
  }
  return id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakePushTask(const std::string& model_path) {
  TaskDefinition def;
  def.name = "push";
  def.description =
      "Push a block with a planar pusher to a goal; block start and goal are drawn uniformly "
      "in a 0.3 m square at least 0.1 m apart; 400 steps at 50 Hz; success = block centre "
      "within 0.05 m of the goal at the last step; terminates when the block leaves the table.";
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  const mjModel* m = def.model.get();
  PushParts parts;
  ROBOLOOP_ASSIGN_OR_RETURN(parts.pusher_x, FindSlideJoint(m, "pusher_x", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.pusher_y, FindSlideJoint(m, "pusher_y", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.block_x, FindSlideJoint(m, "block_x", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.block_y, FindSlideJoint(m, "block_y", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(int goal_body, FindId(m, mjOBJ_BODY, "body", "goal", def.name));
  parts.goal_mocap = m->body_mocapid[goal_body];
  if (parts.goal_mocap < 0) {
    return absl::InvalidArgumentError("task push: body 'goal' must be a mocap body");
  }
  if (m->nu != 2 || m->actuator_trnid[0] != parts.pusher_x ||
      m->actuator_trnid[2] != parts.pusher_y) {
    return absl::InvalidArgumentError(
        "task push: the model must have exactly 2 actuators, on pusher_x then pusher_y");
  }
  def.obs_spec.keys = {{"pusher", {2}}, {"pusher_velocity", {2}}, {"block", {2}},
                       {"block_velocity", {2}}, {"goal", {2}}};
  def.action_spec = ActionSpecFromCtrlRange(m);
  def.control_substeps = 4;
  def.max_steps = 400;
  def.success = SuccessRule::FinalSteps(1);
  return std::unique_ptr<Task>(new PushTask(std::move(def), parts));
}

}  // namespace roboloop::sim
