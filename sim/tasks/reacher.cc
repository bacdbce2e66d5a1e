#include "sim/tasks/reacher.h"

#include <cmath>

#include "common/status.h"
#include "sim/experts/reacher_expert.h"

namespace roboloop::sim {
namespace {

constexpr double kSuccessDistance = 0.02;

// Ids of the reacher's named parts.
struct ReacherParts {
  int shoulder, elbow, fingertip, target_mocap;
};

class ReacherTask : public Task {
 public:
  ReacherTask(TaskDefinition def, ReacherParts parts) : Task(std::move(def)), parts_(parts) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    d->qpos[m->jnt_qposadr[parts_.shoulder]] = rng.Uniform(-M_PI, M_PI);
    d->qpos[m->jnt_qposadr[parts_.elbow]] = rng.Uniform(-2.5, 2.5);
    const double radius = std::sqrt(rng.Uniform(kReacherMinRadius * kReacherMinRadius,
                                                kReacherMaxRadius * kReacherMaxRadius));
    const double angle = rng.Uniform(-M_PI, M_PI);
    mjtNum* target = &d->mocap_pos[3 * parts_.target_mocap];
    target[0] = radius * std::cos(angle);
    target[1] = radius * std::sin(angle);
    target[2] = 0.0;
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    const double q1 = d->qpos[m->jnt_qposadr[parts_.shoulder]];
    const double q2 = d->qpos[m->jnt_qposadr[parts_.elbow]];
    const mjtNum* tip = &d->site_xpos[3 * parts_.fingertip];
    const mjtNum* target = &d->mocap_pos[3 * parts_.target_mocap];
    const double values[] = {std::cos(q1), std::sin(q1), std::cos(q2), std::sin(q2),
                             d->qvel[m->jnt_dofadr[parts_.shoulder]],
                             d->qvel[m->jnt_dofadr[parts_.elbow]],
                             tip[0], tip[1], target[0], target[1]};
    for (int i = 0; i < 10; ++i) obs[i] = static_cast<float>(values[i]);
  }

  double Reward(const mjModel*, const mjData* d) const override {
    return -Distance(d) - 0.001 * (d->ctrl[0] * d->ctrl[0] + d->ctrl[1] * d->ctrl[1]);
  }

  bool SuccessCondition(const mjModel*, const mjData* d) const override {
    return Distance(d) < kSuccessDistance;
  }

  absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const override {
    return MakeReacherExpert(*this);
  }

 private:
  double Distance(const mjData* d) const {
    const mjtNum* tip = &d->site_xpos[3 * parts_.fingertip];
    const mjtNum* target = &d->mocap_pos[3 * parts_.target_mocap];
    return std::hypot(tip[0] - target[0], tip[1] - target[1]);
  }

  ReacherParts parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakeReacherTask(const std::string& model_path) {
  TaskDefinition def;
  def.name = "reacher";
  def.description =
      "Move a 2-link planar arm's fingertip to a target drawn uniformly over the reachable "
      "annulus (0.05–0.21 m); 200 steps at 50 Hz; success = fingertip within 0.02 m of the "
      "target at each of the final 20 steps.";
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  const mjModel* m = def.model.get();
  ReacherParts parts;
  ROBOLOOP_ASSIGN_OR_RETURN(parts.shoulder, FindId(m, mjOBJ_JOINT, "joint", "shoulder", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.elbow, FindId(m, mjOBJ_JOINT, "joint", "elbow", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(parts.fingertip, FindId(m, mjOBJ_SITE, "site", "fingertip", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(int target_body, FindId(m, mjOBJ_BODY, "body", "target", def.name));
  parts.target_mocap = m->body_mocapid[target_body];
  if (parts.target_mocap < 0) {
    return absl::InvalidArgumentError("task reacher: body 'target' must be a mocap body");
  }
  def.obs_spec.keys = {{"arm", {4}}, {"velocity", {2}}, {"fingertip", {2}}, {"target", {2}}};
  def.action_spec = ActionSpecFromCtrlRange(m);
  def.control_substeps = 2;
  def.max_steps = 200;
  def.success = SuccessRule::FinalSteps(20);
  return std::unique_ptr<Task>(new ReacherTask(std::move(def), parts));
}

}  // namespace roboloop::sim
