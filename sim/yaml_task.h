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
// resolves every named sensor, site, body, joint and goal. All problems of the file (unknown
// keys, unknown names, malformed values, invalid goals, an MJCF that does not compile) are
// reported together in one InvalidArgument error, one line each naming the file, line and
// key path; a YAML syntax error is reported alone.
absl::StatusOr<std::unique_ptr<Task>> LoadYamlTask(const std::string& path);

// Validates the YAML task at `path` now (so errors surface before any stepping) and
// registers it under its `name`.
absl::Status RegisterYamlTask(const std::string& path, TaskRegistry* registry);

}  // namespace roboloop::sim
