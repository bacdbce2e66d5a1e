// Loads out-of-tree task plugins (shared libraries with the C entry point of
// sim/task_plugin_abi.h) into a TaskRegistry.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/task_registry.h"

namespace roboloop::sim {

// Starts the guard of plug-in calls (sim/plugin_call_guard.h: crash messages, the watchdog with
// the limit of SetPluginCallTimeout or $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S), dlopens `path` (a file path; a name without a '/' is a file in
// the working directory, never a search of the library path), checks the ABI version of the library
// and of each task, validates each task's description and registers it; the tasks' observations
// are checked for writes past their declared size. Errors name the path: an invalid
// $ROBOLOOP_PLUGIN_CALL_TIMEOUT_S, a library that fails to load,
// a missing entry point, an entry point that fails, a wrong ABI version, a task that fails
// validation (a task, obs key or camera name that cannot be a dataset key: CheckDatasetName)
// or a name that is already registered; so do the errors of building a task later (its MJCF,
// its cameras). The library stays loaded for the life of the process.
absl::Status LoadTaskPlugin(const std::string& path, TaskRegistry* registry);

// Loads every plugin listed in $ROBOLOOP_TASK_PLUGINS (colon-separated paths, each as
// LoadTaskPlugin takes it); OK when unset.
absl::Status LoadTaskPluginsFromEnvironment(TaskRegistry* registry);

}  // namespace roboloop::sim
