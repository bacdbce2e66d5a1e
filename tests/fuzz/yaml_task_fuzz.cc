// Fuzz target: declarative YAML tasks (sim/yaml_task.h). The bytes are the task file; the MJCF
// models it may name (models/<task>.xml as in configs/tasks, slide_goal.xml as in
// tests/testdata/yaml_task) sit beside it, so valid inputs compile a real model and resolve
// every name against it. A task that loads is reset and stepped twice with a zero action.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/env.h"
#include "sim/yaml_task.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Links the models the seed tasks name into the scratch directory (once).
void LinkModels() {
  static const bool kLinked = [] {
    const std::filesystem::path dir = roboloop::fuzz::ScratchDir();
    const std::filesystem::path source = ROBOLOOP_SOURCE_DIR;
    std::filesystem::create_directory_symlink(source / "configs/tasks/models", dir / "models");
    std::filesystem::create_symlink(source / "tests/testdata/yaml_task/slide_goal.xml", dir / "slide_goal.xml");
    return true;
  }();
  (void)kLinked;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LinkModels();
  const std::string path = roboloop::fuzz::WriteScratchFile("task.yaml", data, size);
  const absl::StatusOr<std::unique_ptr<roboloop::sim::Task>> task = roboloop::sim::LoadYamlTask(path);
  if (!task.ok()) return 0;
  roboloop::sim::EnvOptions options;
  options.max_steps = 2;
  absl::StatusOr<std::unique_ptr<roboloop::sim::Env>> env = roboloop::sim::Env::Create(task->get(), options);
  if (!env.ok()) return 0;
  std::vector<float> obs(static_cast<size_t>((*task)->obs_spec().size()));
  const std::vector<float> action(static_cast<size_t>((*task)->action_spec().size()), 0.0f);
  if (!(*env)->Reset(/*seed=*/1, /*episode_index=*/0, obs.data()).ok()) return 0;
  while (!(*env)->done()) (*env)->Step(action.data(), static_cast<int>(action.size()), obs.data());
  return 0;
}
