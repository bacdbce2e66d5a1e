// What a declarative YAML task resolved against its model (sim/yaml_task.h): points,
// goals, reward terms, conditions, observation sources and reset noise, with the functions
// that evaluate them on an mjData. Internal to the YAML task loader and its parser.
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

#include "sim/rng.h"

namespace roboloop::sim {

// A goal: a point sampled uniformly in the world box [low, high] at reset. Either a mocap
// body (its mocap_pos is set) or a body moved by slide joints along world axes (their qpos
// is set so the body lands on the sample).
struct YamlGoal {
  int body = -1;                     // the goal's body id
  int mocap = -1;                    // its mocap id, or -1 for a slide-joint goal
  int slide_qpos[3] = {-1, -1, -1};  // per world axis: qpos address of its slide joint, or -1
  double slide_sign[3] = {1, 1, 1};  // +1 or -1: the joint's axis along or against the world axis
  double rest[3] = {0, 0, 0};        // world position of the body with its joints at qpos0
  double low[3] = {0, 0, 0};         // sampling box, world frame
  double high[3] = {0, 0, 0};
};

// A point whose world position a term reads: a site, a body (its frame origin) or a goal.
struct YamlPoint {
  enum class Kind { kSite, kBody, kGoal };
  Kind kind = Kind::kSite;
  int index = -1;  // site id, body id or index into YamlTaskSpec::goals
};

// A scalar computed from the state: a reward term's value or a condition's subject.
struct YamlQuantity {
  enum class Kind { kDistance, kControlCost, kJointVelocityCost, kAlive, kUpright, kBodyPosition };
  Kind kind = Kind::kAlive;
  YamlPoint from, to;  // kDistance: the two points
  int body = -1;       // kUpright, kBodyPosition: body id
  int component = 2;   // kBodyPosition: 0, 1, 2 for x, y, z
};

// One summand of the reward: weight × quantity.
struct YamlRewardTerm {
  YamlQuantity quantity;
  double weight = 1.0;
};

// True when the quantity is below (or above) the threshold.
struct YamlCondition {
  YamlQuantity quantity;
  bool below = true;
  double threshold = 0.0;
};

// Where one observation key reads from.
struct YamlObsSource {
  enum class Kind { kSitePos, kBodyPos, kBodyQuat, kJointQpos, kJointQvel, kSensor, kGoal };
  Kind kind = Kind::kSitePos;
  int index = 0;  // id, goal index, or address into qpos/qvel/sensordata
  int size = 3;
};

// A uniform offset added to one hinge or slide joint's qpos at reset.
struct YamlJointNoise {
  int qpos_adr = 0;
  double low = 0, high = 0;
};

// Everything a YAML task resolved against its model.
struct YamlTaskSpec {
  std::vector<YamlObsSource> observations;
  std::vector<YamlGoal> goals;
  std::vector<YamlRewardTerm> reward;
  YamlCondition success;
  std::vector<YamlCondition> termination;
  std::vector<YamlJointNoise> reset_noise;
};

// Moves `goal` to a point drawn uniformly in its box (three draws from `rng`, x then y then z).
void PlaceGoal(const YamlGoal& goal, const mjModel* m, mjData* d, Rng& rng);

// Writes the world position of `goal` in `d` to `pos` (exact also before mj_forward).
void GoalPosition(const YamlGoal& goal, const mjModel* m, const mjData* d, double pos[3]);

// The value of `q` in the state `d` (positions as of the last mj_forward or mj_step).
double Evaluate(const YamlQuantity& q, const YamlTaskSpec& spec, const mjModel* m, const mjData* d);

// Whether condition `c` holds in the state `d`.
bool Holds(const YamlCondition& c, const YamlTaskSpec& spec, const mjModel* m, const mjData* d);

// Writes source.size floats of observation from `d` to `obs`.
void ObserveSource(const YamlObsSource& source, const YamlTaskSpec& spec, const mjModel* m, const mjData* d,
                   float* obs);

}  // namespace roboloop::sim
