#include "sim/tasks/pendulum.h"

#include <cmath>

#include "common/status.h"
#include "sim/experts/pendulum_expert.h"
#include "sim/tasks/angles.h"

namespace roboloop::sim {
namespace {

class PendulumTask : public Task {
 public:
  PendulumTask(TaskDefinition def, int hinge) : Task(std::move(def)), hinge_(hinge) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    d->qpos[m->jnt_qposadr[hinge_]] = M_PI + rng.Uniform(-0.05, 0.05);
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    const double theta = d->qpos[m->jnt_qposadr[hinge_]];
    obs[0] = static_cast<float>(std::cos(theta));
    obs[1] = static_cast<float>(std::sin(theta));
    obs[2] = static_cast<float>(d->qvel[m->jnt_dofadr[hinge_]]);
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    return 0.5 * (1.0 + std::cos(d->qpos[m->jnt_qposadr[hinge_]])) - 0.001 * d->ctrl[0] * d->ctrl[0];
  }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return std::abs(WrapAngle(d->qpos[m->jnt_qposadr[hinge_]])) < 0.2;
  }

  absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const override {
    return MakePendulumExpert(*this);
  }

 private:
  int hinge_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakePendulumTask(const std::string& model_path) {
  TaskDefinition def;
  def.name = "pendulum-swingup";
  def.description =
      "Swing a torque-limited pendulum (2 N m < 4.9 N m gravity torque) up from hanging "
      "(θ = π ± 0.05) and hold it; 500 steps at 50 Hz; success = |θ| < 0.2 rad at each of "
      "the final 100 steps.";
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  ROBOLOOP_ASSIGN_OR_RETURN(int hinge, FindId(def.model.get(), mjOBJ_JOINT, "joint", "hinge", def.name));
  def.obs_spec.keys = {{"orientation", {2}}, {"velocity", {1}}};
  def.action_spec = ActionSpecFromCtrlRange(def.model.get());
  def.control_substeps = 2;
  def.max_steps = 500;
  def.success = SuccessRule::FinalSteps(100);
  return std::unique_ptr<Task>(new PendulumTask(std::move(def), hinge));
}

}  // namespace roboloop::sim
