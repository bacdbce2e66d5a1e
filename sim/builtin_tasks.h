// The built-in tasks of issue 4 (req 3) and their registration.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/task_registry.h"

namespace roboloop::sim {

// Where the built-in tasks find their models.
struct BuiltinTaskOptions {
  std::string models_dir = DefaultModelsDir();  // holds cartpole.xml, pendulum.xml, …
  std::string humanoid_model = DefaultHumanoidModel();  // Gymnasium's humanoid.xml

  // $ROBOLOOP_TASK_MODELS if set, else configs/tasks/models of the source tree.
  static std::string DefaultModelsDir();
  // $ROBOLOOP_HUMANOID_MODEL if set, else the humanoid.xml of the pinned gymnasium wheel in the
  // project's Python environment (python/pins.txt).
  static std::string DefaultHumanoidModel();
};

// Registers cartpole-balance, cartpole-swingup, pendulum-swingup, reacher, push and
// humanoid-stand into `registry`; AlreadyExists if any of them is already there.
absl::Status RegisterBuiltins(TaskRegistry* registry,
                              const BuiltinTaskOptions& options = BuiltinTaskOptions());

}  // namespace roboloop::sim
