#include "sim/builtin_tasks.h"

#include <cstdlib>

#include "common/status.h"
#include "sim/tasks/cartpole.h"

namespace roboloop::sim {

std::string BuiltinTaskOptions::DefaultModelsDir() {
  const char* from_env = std::getenv("ROBOLOOP_TASK_MODELS");
  if (from_env != nullptr && *from_env != '\0') return from_env;
  return ROBOLOOP_DEFAULT_TASK_MODELS;
}

absl::Status RegisterBuiltins(TaskRegistry* registry, const BuiltinTaskOptions& options) {
  const std::string cartpole = options.models_dir + "/cartpole.xml";
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "cartpole-balance", "keep the pole upright from near upright (500 steps, 50 Hz)",
      [cartpole] { return MakeCartpoleTask(CartpoleMode::kBalance, cartpole); }));
  ROBOLOOP_RETURN_IF_ERROR(registry->Register(
      "cartpole-swingup", "swing the pole up from hanging and balance it (500 steps, 50 Hz)",
      [cartpole] { return MakeCartpoleTask(CartpoleMode::kSwingup, cartpole); }));
  return absl::OkStatus();
}

}  // namespace roboloop::sim
