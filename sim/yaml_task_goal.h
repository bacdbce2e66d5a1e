// Resolving a YAML task's goal body against its model (sim/yaml_task.h): a mocap body, or a
// body moved by slide joints along world axes. Internal to the YAML task parser.
#pragma once

#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "sim/yaml_task_spec.h"

namespace roboloop::sim {

// Makes a goal of body `body` of `m` sampled in the world box [low, high]. A mocap body is
// placed through mocap_pos. Any other body must move only by slide joints, each along a world
// axis (one per axis), under parents that do not move; every randomised axis (low < high)
// needs such a joint and every other axis must equal the body's rest position. With
// `require_mocap`, a body that is not a mocap body is a problem. Appends one sentence per
// problem (naming the body and joint) to `problems`.
YamlGoal ResolveGoal(const mjModel* m, int body, bool require_mocap, const double low[3], const double high[3],
                     std::vector<std::string>* problems);

}  // namespace roboloop::sim
