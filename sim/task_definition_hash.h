// The hash of a task's definition that evaluation protocols pin (issue 7, req 1): results
// under one protocol are comparable only when every endpoint simulates the same task.
#pragma once

#include <string>

#include "sim/task.h"

namespace roboloop::sim {

// Lowercase hex sha256 over the task's compiled model (MuJoCo's binary model), its name,
// description, observation and action specs, control substeps, horizon, success rule and
// definition source (a YAML task's file), and `summary`. Equal for equal definitions in one
// MuJoCo version; thread-safe.
std::string TaskDefinitionHash(const Task& task, const std::string& summary);

}  // namespace roboloop::sim
