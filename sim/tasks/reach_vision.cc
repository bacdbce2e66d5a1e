#include "sim/tasks/reach_vision.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/experts/reach_vision_expert.h"
#include "sim/task_cameras.h"

namespace roboloop::sim {
namespace {

// Ids of reach-vision's named parts.
struct ReachVisionParts {
  int finger_x, finger_y, target_mocap;
};

class ReachVisionTask : public Task {
 public:
  ReachVisionTask(TaskDefinition def, ReachVisionParts parts) : Task(std::move(def)), parts_(parts) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    const double x = rng.Uniform(-kReachVisionStartHalfWidth, kReachVisionStartHalfWidth);
    const double y = rng.Uniform(-kReachVisionStartHalfWidth, kReachVisionStartHalfWidth);
    double tx = 0, ty = 0;
    // Rejection sampling keeps the target uniform over the allowed region.
    do {
      tx = rng.Uniform(-kReachVisionTargetHalfWidth, kReachVisionTargetHalfWidth);
      ty = rng.Uniform(-kReachVisionTargetHalfWidth, kReachVisionTargetHalfWidth);
    } while (std::hypot(tx - x, ty - y) < kReachVisionMinTargetDistance);
    d->qpos[m->jnt_qposadr[parts_.finger_x]] = x;
    d->qpos[m->jnt_qposadr[parts_.finger_y]] = y;
    mjtNum* target = &d->mocap_pos[3 * parts_.target_mocap];
    target[0] = tx;
    target[1] = ty;
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    obs[0] = static_cast<float>(d->qpos[m->jnt_qposadr[parts_.finger_x]]);
    obs[1] = static_cast<float>(d->qpos[m->jnt_qposadr[parts_.finger_y]]);
    obs[2] = static_cast<float>(d->qvel[m->jnt_dofadr[parts_.finger_x]]);
    obs[3] = static_cast<float>(d->qvel[m->jnt_dofadr[parts_.finger_y]]);
  }

  void ObservePrivileged(const mjModel*, const mjData* d, float* privileged) const override {
    privileged[0] = static_cast<float>(d->mocap_pos[3 * parts_.target_mocap]);
    privileged[1] = static_cast<float>(d->mocap_pos[3 * parts_.target_mocap + 1]);
  }

  double Reward(const mjModel* m, const mjData* d) const override { return -Distance(m, d); }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return Distance(m, d) < kReachVisionSuccessDistance;
  }

  absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const override { return MakeReachVisionExpert(*this); }

 private:
  double Distance(const mjModel* m, const mjData* d) const {
    const mjtNum* target = &d->mocap_pos[3 * parts_.target_mocap];
    return std::hypot(d->qpos[m->jnt_qposadr[parts_.finger_x]] - target[0],
                      d->qpos[m->jnt_qposadr[parts_.finger_y]] - target[1]);
  }

  ReachVisionParts parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakeReachVisionTask(const std::string& model_path) {
  TaskDefinition def;
  def.name = "reach-vision";
  def.description = absl::StrCat(
      "Move a planar finger onto a red target disk that only the overhead camera 'top' shows (the "
      "state holds the finger's position and velocity, not the target); target uniform in a 0.4 m "
      "square at least 0.1 m from the finger's start; 60 steps at 20 Hz; success = finger within ",
      kReachVisionSuccessDistance, " m of the target for 5 consecutive steps.");
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  const mjModel* m = def.model.get();
  ReachVisionParts parts;
  ROBOLOOP_ASSIGN_OR_RETURN(parts.finger_x, FindId(m, mjOBJ_JOINT, "joint", "finger_x", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.finger_y, FindId(m, mjOBJ_JOINT, "joint", "finger_y", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(int target_body, FindId(m, mjOBJ_BODY, "body", "target", def.name));
  parts.target_mocap = m->body_mocapid[target_body];
  if (parts.target_mocap < 0) {
    return absl::InvalidArgumentError("task reach-vision: body 'target' must be a mocap body");
  }
  if (m->nu != 2) return absl::InvalidArgumentError("task reach-vision: the model must have exactly 2 actuators");
  def.obs_spec.keys = {{"finger", {2}}, {"finger_velocity", {2}}};
  def.obs_spec.cameras = {{"top", "top", kReachVisionImageSide, kReachVisionImageSide}};
  def.privileged_spec.keys = {{"target", {2}}};
  def.action_spec = ActionSpecFromCtrlRange(m);
  def.control_substeps = 5;
  def.max_steps = 60;
  def.success = SuccessRule::HeldFor(5);
  ROBOLOOP_RETURN_IF_ERROR(PrepareTaskCameras(&def, "task reach-vision"));
  return std::unique_ptr<Task>(new ReachVisionTask(std::move(def), parts));
}

}  // namespace roboloop::sim
