// The task registry of a process that runs simulations itself (issue 27, req 3): the one
// composition the embedded services, the eval stack, the sim backend and reports share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/task_registry.h"

namespace roboloop::wiring {

// Built-in tasks, plugins of $ROBOLOOP_TASK_PLUGINS and `plugins`, and the YAML tasks of
// `yaml_tasks`; an error names the plugin or task file that failed.
absl::StatusOr<std::unique_ptr<sim::TaskRegistry>> TaskRegistryWith(const std::vector<std::string>& plugins,
                                                                    const std::vector<std::string>& yaml_tasks);

}  // namespace roboloop::wiring
