#include "wiring/tasks.h"

#include "common/status.h"
#include "sim/builtin_tasks.h"
#include "sim/task_plugin.h"
#include "sim/yaml_task.h"

namespace roboloop::wiring {

absl::StatusOr<std::unique_ptr<sim::TaskRegistry>> TaskRegistryWith(const std::vector<std::string>& plugins,
                                                                    const std::vector<std::string>& yaml_tasks) {
  auto registry = std::make_unique<sim::TaskRegistry>();
  ROBOLOOP_RETURN_IF_ERROR(sim::RegisterBuiltins(registry.get()));
  ROBOLOOP_RETURN_IF_ERROR(sim::LoadTaskPluginsFromEnvironment(registry.get()));
  for (const std::string& plugin : plugins) ROBOLOOP_RETURN_IF_ERROR(sim::LoadTaskPlugin(plugin, registry.get()));
  for (const std::string& file : yaml_tasks) {
    ROBOLOOP_RETURN_IF_ERROR(sim::RegisterYamlTask(file, registry.get()));  // errors name the file
  }
  return registry;
}

}  // namespace roboloop::wiring
