#include "sim/tasks/humanoid_stand.h"

#include "common/status.h"

namespace roboloop::sim {
namespace {

constexpr double kHeadHeight = 1.2;
// qpos entries of the root free joint (position and quaternion), left noise-free.
constexpr int kRootQpos = 7;

class HumanoidStandTask : public Task {
 public:
  HumanoidStandTask(TaskDefinition def, int head_geom) : Task(std::move(def)), head_(head_geom) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    for (int i = kRootQpos; i < m->nq; ++i) d->qpos[i] += rng.Uniform(-0.01, 0.01);
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    for (int i = 0; i < m->nq; ++i) obs[i] = static_cast<float>(d->qpos[i]);
    for (int i = 0; i < m->nv; ++i) obs[m->nq + i] = static_cast<float>(d->qvel[i]);
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    double control = 0.0;
    for (int i = 0; i < m->nu; ++i) control += d->ctrl[i] * d->ctrl[i];
    return HeadHeight(d) + 0.1 - 0.01 * control;
  }

  bool SuccessCondition(const mjModel*, const mjData* d) const override {
    return HeadHeight(d) > kHeadHeight;
  }

 private:
  double HeadHeight(const mjData* d) const { return d->geom_xpos[3 * head_ + 2]; }

  int head_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> MakeHumanoidStandTask(const std::string& model_path) {
  TaskDefinition def;
  def.name = "humanoid-stand";
  def.description =
      "Keep Gymnasium's humanoid standing from its default pose; 500 steps at 66.7 Hz "
      "(Gymnasium's timestep 0.003 s, frame skip 5); success = "
      "head height > 1.2 m at the last step. Throughput task, no expert.";
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(model_path));
  const mjModel* m = def.model.get();
  ROBOLOOP_ASSIGN_OR_RETURN(int head, FindId(m, mjOBJ_GEOM, "geom", "head", def.name));
  if (m->njnt == 0 || m->jnt_type[0] != mjJNT_FREE) {
    return absl::InvalidArgumentError("task humanoid-stand: the first joint must be a free joint");
  }
  def.obs_spec.keys = {{"qpos", {m->nq}}, {"qvel", {m->nv}}};
  def.action_spec = ActionSpecFromCtrlRange(m);
  def.control_substeps = 5;
  def.max_steps = 500;
  def.success = SuccessRule::FinalSteps(1);
  return std::unique_ptr<Task>(new HumanoidStandTask(std::move(def), head));
}

}  // namespace roboloop::sim
