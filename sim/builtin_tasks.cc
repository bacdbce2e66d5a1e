#include "sim/builtin_tasks.h"

#include <cstdlib>

#include "common/status.h"
#include "sim/tasks/cartpole.h"
#include "sim/tasks/humanoid_stand.h"
#include "sim/tasks/pendulum.h"
#include "sim/tasks/push.h"
#include "sim/tasks/reach_vision.h"
#include "sim/tasks/reacher.h"

namespace roboloop::sim {

std::string BuiltinTaskOptions::DefaultModelsDir() {
  const char* from_env = std::getenv("ROBOLOOP_TASK_MODELS");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return ROBOLOOP_DEFAULT_TASK_MODELS;
}

std::string BuiltinTaskOptions::DefaultHumanoidModel() {
  const char* from_env = std::getenv("ROBOLOOP_HUMANOID_MODEL");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return ROBOLOOP_DEFAULT_HUMANOID_MODEL;
}

absl::Status RegisterBuiltins(TaskRegistry* registry, const BuiltinTaskOptions& options) {
  const std::string cartpole = options.models_dir + "/cartpole.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "cartpole-balance", "keep the pole upright from near upright (500 steps, 50 Hz)",
      [cartpole] { return MakeCartpoleTask(CartpoleMode::kBalance, cartpole); }));
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "cartpole-swingup", "swing the pole up from hanging and balance it (500 steps, 50 Hz)",
      [cartpole] { return MakeCartpoleTask(CartpoleMode::kSwingup, cartpole); }));
  const std::string pendulum = options.models_dir + "/pendulum.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "pendulum-swingup", "pump a torque-limited pendulum up and hold it (500 steps, 50 Hz)",
      [pendulum] { return MakePendulumTask(pendulum); }));
  const std::string reacher = options.models_dir + "/reacher.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "reacher", "bring a 2-link arm's fingertip to a sampled target (200 steps, 50 Hz)",
      [reacher] { return MakeReacherTask(reacher); }));
  const std::string push = options.models_dir + "/push.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "push", "push a block with a planar pusher to a sampled goal (400 steps, 50 Hz)",
      [push] { return MakePushTask(push); }));
  const std::string reach_vision = options.models_dir + "/reach_vision.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "reach-vision", "reach a target only the overhead camera shows (60 steps, 20 Hz, 48x48 RGB)",
      [reach_vision] { return MakeReachVisionTask(reach_vision); }));
  const std::string humanoid = options.humanoid_model;
  return registry->Register("humanoid-stand",
                            "keep Gymnasium's humanoid standing (500 steps, throughput task)",
                            [humanoid] { return MakeHumanoidStandTask(humanoid); });
}

}  // namespace roboloop::sim
