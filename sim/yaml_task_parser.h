// The parser of declarative YAML tasks (sim/yaml_task.h; schema in docs/adding-a-task.md).
// Internal to the YAML task loader.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "sim/task.h"
#include "sim/yaml_task_spec.h"
#include "yaml-cpp/yaml.h"

namespace roboloop::sim {

// Parses the YAML task document `root` read from `path`: compiles its MJCF (a path relative
// to `path`) into def->model and fills the rest of `def` (all but definition_source) and
// `spec`. Collects every problem (unknown or missing keys, wrong types, names the model lacks,
// invalid goals, an MJCF that does not compile) and returns them together in one
// InvalidArgument error: a header naming the file and task, then one line per problem,
// "<path>:<line>: <key path>: <what is wrong>".
absl::Status ParseYamlTask(const std::string& path, const YAML::Node& root, TaskDefinition* def,
                           YamlTaskSpec* spec);

}  // namespace roboloop::sim
