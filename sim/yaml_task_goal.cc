#include "sim/yaml_task_goal.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "sim/mujoco_guard.h"

namespace roboloop::sim {
namespace {

constexpr char kAxes[] = "xyz";
constexpr double kTolerance = 1e-6;

std::string Name(const mjModel* m, int type, int id) {
  const char* name = mj_id2name(m, type, id);
  return name != nullptr ? name : absl::StrCat("#", id);
}

// The world axis (0, 1, 2) that the unit vector `axis` points along or against, or -1.
int WorldAxis(const mjtNum* axis, double* sign) {
  for (int k = 0; k < 3; ++k) {
    if (std::abs(std::abs(axis[k]) - 1.0) < kTolerance) {
      *sign = axis[k] > 0 ? 1.0 : -1.0;
      return k;
    }
  }
  return -1;
}

// Fills the goal's slide joints from the kinematics `d` at qpos0.
void ResolveSlideJoints(const mjModel* m, const mjData* d, YamlGoal* goal, std::vector<std::string>* problems) {
  const std::string body = Name(m, mjOBJ_BODY, goal->body);
  for (int j = m->body_jntadr[goal->body]; j < m->body_jntadr[goal->body] + m->body_jntnum[goal->body]; ++j) {
    const std::string joint = Name(m, mjOBJ_JOINT, j);
    if (m->jnt_type[j] != mjJNT_SLIDE) {
      problems->push_back(absl::StrCat("body '", body, "' has joint '", joint,
                                       "' that is not a slide joint; a goal body moves only by slide joints"));
      continue;
    }
    double sign = 1.0;
    const int k = WorldAxis(&d->xaxis[3 * j], &sign);
    if (k < 0) {
      problems->push_back(
          absl::StrCat("slide joint '", joint, "' of body '", body, "' is not along a world axis"));
    } else if (goal->slide_qpos[k] >= 0) {
      problems->push_back(absl::StrCat("body '", body, "' has two slide joints along ", std::string(1, kAxes[k])));
    } else {
      goal->slide_qpos[k] = m->jnt_qposadr[j];
      goal->slide_sign[k] = sign;
    }
  }
}

void CheckParentsFixed(const mjModel* m, int body, std::vector<std::string>* problems) {
  for (int parent = m->body_parentid[body]; parent > 0; parent = m->body_parentid[parent]) {
    if (m->body_jntnum[parent] > 0) {
      problems->push_back(absl::StrCat("goal body '", Name(m, mjOBJ_BODY, body), "' is attached to body '",
                                       Name(m, mjOBJ_BODY, parent),
                                       "', which has joints; a goal's parents must not move"));
    }
  }
}

void CheckAxesCovered(const mjModel* m, const YamlGoal& goal, std::vector<std::string>* problems) {
  const std::string body = Name(m, mjOBJ_BODY, goal.body);
  for (int k = 0; k < 3; ++k) {
    if (goal.slide_qpos[k] >= 0) continue;
    const std::string axis(1, kAxes[k]);
    if (goal.low[k] < goal.high[k]) {
      problems->push_back(absl::StrCat("the goal is randomised along ", axis, " but body '", body,
                                       "' has no slide joint along ", axis));
    } else if (std::abs(goal.low[k] - goal.rest[k]) > kTolerance) {
      problems->push_back(absl::StrCat("body '", body, "' has no slide joint along ", axis, " and stays at ", axis,
                                       " = ", goal.rest[k], "; set low and high ", axis, " to that"));
    }
  }
}

}  // namespace

YamlGoal ResolveGoal(const mjModel* m, int body, bool require_mocap, const double low[3], const double high[3],
                     std::vector<std::string>* problems) {
  YamlGoal goal;
  goal.body = body;
  goal.mocap = m->body_mocapid[body];
  for (int k = 0; k < 3; ++k) {
    goal.low[k] = low[k];
    goal.high[k] = high[k];
  }
  if (goal.mocap >= 0) return goal;
  const std::string name = Name(m, mjOBJ_BODY, body);
  if (require_mocap) {
    problems->push_back(
        absl::StrCat("body '", name, "' is not a mocap body (use 'body:' for a body moved by slide joints)"));
    return goal;
  }
  if (m->body_jntnum[body] == 0) {
    problems->push_back(absl::StrCat("body '", name, "' is neither a mocap body nor moved by slide joints"));
    return goal;
  }
  DataPtr data(mj_makeData(m));
  mj_kinematics(m, data.get());
  for (int k = 0; k < 3; ++k) goal.rest[k] = data->xpos[3 * body + k];
  ResolveSlideJoints(m, data.get(), &goal, problems);
  CheckParentsFixed(m, body, problems);
  CheckAxesCovered(m, goal, problems);
  return goal;
}

}  // namespace roboloop::sim
