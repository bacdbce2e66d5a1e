// Loads out-of-tree task plugins (shared libraries with the C entry point of
// sim/task_plugin_abi.h) into a TaskRegistry.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/task_registry.h"

namespace roboloop::sim {

// dlopens `path`, checks the ABI version of the library and of each task, validates each
// task's description and registers it. Errors name the path: a library that fails to load,
// a missing entry point, a wrong ABI version, a task that fails validation or a name that
// is already registered. The library stays loaded for the life of the process.
absl::Status LoadTaskPlugin(const std::string& path, TaskRegistry* registry);

// Loads every plugin listed in $ROBOLOOP_TASK_PLUGINS (colon-separated); OK when unset.
absl::Status LoadTaskPluginsFromEnvironment(TaskRegistry* registry);

}  // namespace roboloop::sim
