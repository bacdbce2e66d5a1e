// Declarative tasks in YAML (issue 4, req 2c): an MJCF file plus observations, sampled
// goals, a weighted-sum reward, success, termination and reset noise, with no C++. The
// schema is documented in docs/adding-a-task.md; configs/tasks/point_reach.yaml is the
// reference example.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/task.h"
#include "sim/task_registry.h"

namespace roboloop::sim {

// Parses the YAML task at `path`, compiles its MJCF (a path relative to the YAML file) and
// resolves every named sensor, site, body, joint and goal. Unknown keys, unknown names and
// malformed values are errors naming the file and line.
absl::StatusOr<std::unique_ptr<Task>> LoadYamlTask(const std::string& path);

// Validates the YAML task at `path` now (so errors surface before any stepping) and
// registers it under its `name`.
absl::Status RegisterYamlTask(const std::string& path, TaskRegistry* registry);

}  // namespace roboloop::sim
