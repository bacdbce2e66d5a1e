#include "sim/tasks/cartpole.h"

#include <cmath>

#include "common/status.h"
#include "sim/experts/cartpole_expert.h"
#include "sim/tasks/angles.h"

namespace roboloop::sim {
namespace {

constexpr double kAngleLimit = 0.2;
constexpr double kPositionLimit = 2.0;

class CartpoleTask : public Task {
 public:
  CartpoleTask(TaskDefinition def, CartpoleMode mode, int slider, int hinge)
      : Task(std::move(def)), mode_(mode), slider_(slider), hinge_(hinge) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    const double theta = mode_ == CartpoleMode::kBalance ? rng.Uniform(-0.1, 0.1)
                                                         : M_PI + rng.Uniform(-0.05, 0.05);
    d->qpos[m->jnt_qposadr[hinge_]] = theta;
    d->qpos[m->jnt_qposadr[slider_]] = rng.Uniform(-0.05, 0.05);
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    const double theta = Theta(m, d);
    obs[0] = static_cast<float>(X(m, d));
    obs[1] = static_cast<float>(std::cos(theta));
    obs[2] = static_cast<float>(std::sin(theta));
    obs[3] = static_cast<float>(d->qvel[m->jnt_dofadr[slider_]]);
    obs[4] = static_cast<float>(d->qvel[m->jnt_dofadr[hinge_]]);
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    const double x = X(m, d);
    const double upright = 0.5 * (1.0 + std::cos(Theta(m, d)));
    const double centred = 0.5 * (1.0 + std::exp(-x * x));
    return upright * centred - 0.01 * d->ctrl[0] * d->ctrl[0];
  }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return std::abs(WrapAngle(Theta(m, d))) < kAngleLimit && std::abs(X(m, d)) < kPositionLimit;
  }

  bool Terminated(const mjModel* m, const mjData* d) const override {
    return mode_ == CartpoleMode::kBalance && !SuccessCondition(m, d);
  }

  absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const override {
    return MakeCartpoleExpert(*this, mode_ == CartpoleMode::kSwingup);
  }

 private:
  double Theta(const mjModel* m, const mjData* d) const { return d->qpos[m->jnt_qposadr[hinge_]]; }
  double X(const mjModel* m, const mjData* d) const { return d->qpos[m->jnt_qposadr[slider_]]; }

  CartpoleMode mode_;
  int slider_;
  int hinge_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakeCartpoleTask(CartpoleMode mode,
                                                       const std::string& model_path) {
  const bool balance = mode == CartpoleMode::kBalance;
  TaskDefinition def;
  def.name = balance ? "cartpole-balance" : "cartpole-swingup";
  def.description = balance
      ? "Balance the pole from within ±0.1 rad of upright for 500 steps at 50 Hz; success = "
        "|θ| < 0.2 rad and |x| < 2 m at every step; terminates when that fails."
      : "Swing the pole up from hanging (θ = π ± 0.05) and balance it; 500 steps at 50 Hz; "
        "success = |θ| < 0.2 rad and |x| < 2 m at each of the final 100 steps.";
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  ROBOLOOP_ASSIGN_OR_RETURN(int slider, FindId(def.model.get(), mjOBJ_JOINT, "joint", "slider", def.name));
  ROBOLOOP_ASSIGN_OR_RETURN(int hinge, FindId(def.model.get(), mjOBJ_JOINT, "joint", "hinge", def.name));
  def.obs_spec.keys = {{"position", {3}}, {"velocity", {2}}};
  def.action_spec = ActionSpecFromCtrlRange(def.model.get());
  def.control_substeps = 2;
  def.max_steps = 500;
  def.success = balance ? SuccessRule::EveryStep() : SuccessRule::FinalSteps(100);
  return std::unique_ptr<Task>(new CartpoleTask(std::move(def), mode, slider, hinge));
}

}  // namespace roboloop::sim
