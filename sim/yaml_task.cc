#include "sim/yaml_task.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/status.h"
#include "yaml-cpp/yaml.h"

namespace roboloop::sim {
namespace {

// A scalar computed from the state: a reward term's value or a condition's subject.
struct Quantity {
  enum class Kind { kSiteDistance, kSiteGoalDistance, kControlCost, kJointVelocityCost, kAlive,
                    kUpright, kBodyHeight };
  Kind kind = Kind::kAlive;
  int a = -1;  // site or body id
  int b = -1;  // second site id, or goal mocap id
};
struct RewardTerm {
  Quantity quantity;
  double weight = 1.0;
};
struct Condition {
  Quantity quantity;
  bool below = true;
  double threshold = 0.0;
};
// Where one observation key reads from.
struct ObsSource {
  enum class Kind { kSitePos, kBodyPos, kBodyQuat, kJointQpos, kJointQvel, kSensor, kGoal };
  Kind kind;
  int index;  // id, or address into qpos/qvel/sensordata
  int size;
};
struct Goal {
  std::string name;
  int mocap = -1;
  double low[3] = {0, 0, 0};
  double high[3] = {0, 0, 0};
};
struct JointNoise {
  int qpos_adr;
  double low, high;
};
// Everything a YAML task resolved against its model.
struct YamlTaskSpec {
  std::vector<ObsSource> observations;
  std::vector<Goal> goals;
  std::vector<RewardTerm> reward;
  Condition success;
  std::vector<Condition> termination;
  std::vector<JointNoise> reset_noise;
};

double Norm3(const mjtNum* a, const mjtNum* b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                   (a[2] - b[2]) * (a[2] - b[2]));
}

double Evaluate(const Quantity& q, const mjModel* m, const mjData* d) {
  using Kind = Quantity::Kind;
  double sum = 0.0;
  switch (q.kind) {
    case Kind::kSiteDistance: return Norm3(&d->site_xpos[3 * q.a], &d->site_xpos[3 * q.b]);
    case Kind::kSiteGoalDistance: return Norm3(&d->site_xpos[3 * q.a], &d->mocap_pos[3 * q.b]);
    case Kind::kControlCost:
      for (int i = 0; i < m->nu; ++i) sum += d->ctrl[i] * d->ctrl[i];
      return sum;
    case Kind::kJointVelocityCost:
      for (int i = 0; i < m->nv; ++i) sum += d->qvel[i] * d->qvel[i];
      return sum;
    case Kind::kAlive: return 1.0;
    case Kind::kUpright: return d->xmat[9 * q.a + 8];
    case Kind::kBodyHeight: return d->xpos[3 * q.a + 2];
  }
  return 0.0;
}

bool Holds(const Condition& c, const mjModel* m, const mjData* d) {
  const double value = Evaluate(c.quantity, m, d);
  return c.below ? value < c.threshold : value > c.threshold;
}

class YamlTask : public Task {
 public:
  YamlTask(TaskDefinition def, YamlTaskSpec spec) : Task(std::move(def)), spec_(std::move(spec)) {}

  void Reset(const mjModel*, mjData* d, Rng& rng) const override {
    for (const JointNoise& noise : spec_.reset_noise) {
      d->qpos[noise.qpos_adr] += rng.Uniform(noise.low, noise.high);
    }
    for (const Goal& goal : spec_.goals) {
      for (int k = 0; k < 3; ++k) d->mocap_pos[3 * goal.mocap + k] = rng.Uniform(goal.low[k], goal.high[k]);
    }
  }

  void Observe(const mjModel*, const mjData* d, float* obs) const override {
    for (const ObsSource& source : spec_.observations) {
      const mjtNum* from = Source(source, d);
      for (int i = 0; i < source.size; ++i) *obs++ = static_cast<float>(from[i]);
    }
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    double reward = 0.0;
    for (const RewardTerm& term : spec_.reward) reward += term.weight * Evaluate(term.quantity, m, d);
    return reward;
  }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return Holds(spec_.success, m, d);
  }

  bool Terminated(const mjModel* m, const mjData* d) const override {
    for (const Condition& c : spec_.termination) {
      if (Holds(c, m, d)) return true;
    }
    return false;
  }

 private:
  static const mjtNum* Source(const ObsSource& s, const mjData* d) {
    using Kind = ObsSource::Kind;
    switch (s.kind) {
      case Kind::kSitePos: return &d->site_xpos[3 * s.index];
      case Kind::kBodyPos: return &d->xpos[3 * s.index];
      case Kind::kBodyQuat: return &d->xquat[4 * s.index];
      case Kind::kJointQpos: return &d->qpos[s.index];
      case Kind::kJointQvel: return &d->qvel[s.index];
      case Kind::kSensor: return &d->sensordata[s.index];
      case Kind::kGoal: return &d->mocap_pos[3 * s.index];
    }
    return nullptr;
  }

  YamlTaskSpec spec_;
};

// Parses one YAML task file against its compiled model; every error names file and line.
class YamlTaskParser {
 public:
  YamlTaskParser(std::string path, std::string task) : path_(std::move(path)), task_(std::move(task)) {}

  absl::Status Error(const YAML::Node& node, const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ":", node.Mark().line + 1, ": task ", task_, ": ", message));
  }

  absl::Status CheckKeys(const YAML::Node& node, const std::set<std::string>& allowed) const {
    if (!node.IsMap()) return Error(node, "expected a mapping");
    for (const auto& item : node) {
      const std::string key = item.first.as<std::string>();
      if (allowed.count(key) == 0) {
        return Error(item.first, absl::StrCat("unknown key '", key, "'; expected one of: ",
                                              absl::StrJoin(allowed, ", ")));
      }
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Get(const YAML::Node& node, const std::string& key) const {
    if (!node[key]) return Error(node, absl::StrCat("missing key '", key, "'"));
    try {
      return node[key].as<T>();
    } catch (const YAML::Exception&) {
      return Error(node[key], absl::StrCat("'", key, "' has the wrong type"));
    }
  }

  absl::StatusOr<int> Named(const mjModel* m, const YAML::Node& node, const std::string& key,
                            int type, const std::string& kind) const {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string name, Get<std::string>(node, key));
    const int id = mj_name2id(m, type, name.c_str());
    if (id < 0) return Error(node[key], absl::StrCat("the model has no ", kind, " named '", name, "'"));
    return id;
  }

  absl::StatusOr<int> GoalMocap(const YAML::Node& node, const std::string& key,
                                const std::vector<Goal>& goals) const {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string name, Get<std::string>(node, key));
    for (const Goal& goal : goals) {
      if (goal.name == name) return goal.mocap;
    }
    return Error(node[key], absl::StrCat("no goal named '", name, "' is declared under goals"));
  }

  absl::StatusOr<Goal> ParseGoal(const mjModel* m, const YAML::Node& node) const {
    ROBOLOOP_RETURN_IF_ERROR(CheckKeys(node, {"name", "mocap_body", "low", "high"}));
    Goal goal;
    ROBOLOOP_ASSIGN_OR_RETURN(goal.name, Get<std::string>(node, "name"));
    ROBOLOOP_ASSIGN_OR_RETURN(int body, Named(m, node, "mocap_body", mjOBJ_BODY, "body"));
    goal.mocap = m->body_mocapid[body];
    if (goal.mocap < 0) return Error(node["mocap_body"], "the goal's body must be a mocap body");
    ROBOLOOP_ASSIGN_OR_RETURN(auto low, Get<std::vector<double>>(node, "low"));
    ROBOLOOP_ASSIGN_OR_RETURN(auto high, Get<std::vector<double>>(node, "high"));
    if (low.size() != 3 || high.size() != 3) return Error(node, "low and high need 3 values (x, y, z)");
    for (int k = 0; k < 3; ++k) {
      if (!(low[k] <= high[k])) return Error(node, "low must not exceed high");
      goal.low[k] = low[k];
      goal.high[k] = high[k];
    }
    return goal;
  }

  absl::StatusOr<Quantity> ParseQuantity(const mjModel* m, const YAML::Node& node,
                                         const std::vector<Goal>& goals) const {
    using Kind = Quantity::Kind;
    ROBOLOOP_ASSIGN_OR_RETURN(std::string type, Get<std::string>(node, "type"));
    Quantity q;
    if (type == "site_distance") {
      q.kind = Kind::kSiteDistance;
      ROBOLOOP_ASSIGN_OR_RETURN(q.a, Named(m, node, "site", mjOBJ_SITE, "site"));
      ROBOLOOP_ASSIGN_OR_RETURN(q.b, Named(m, node, "other_site", mjOBJ_SITE, "site"));
    } else if (type == "site_goal_distance") {
      q.kind = Kind::kSiteGoalDistance;
      ROBOLOOP_ASSIGN_OR_RETURN(q.a, Named(m, node, "site", mjOBJ_SITE, "site"));
      ROBOLOOP_ASSIGN_OR_RETURN(q.b, GoalMocap(node, "goal", goals));
    } else if (type == "control_cost") {
      q.kind = Kind::kControlCost;
    } else if (type == "joint_velocity_cost") {
      q.kind = Kind::kJointVelocityCost;
    } else if (type == "alive_bonus") {
      q.kind = Kind::kAlive;
    } else if (type == "upright" || type == "body_height") {
      q.kind = type == "upright" ? Kind::kUpright : Kind::kBodyHeight;
      ROBOLOOP_ASSIGN_OR_RETURN(q.a, Named(m, node, "body", mjOBJ_BODY, "body"));
    } else {
      return Error(node["type"], absl::StrCat("unknown term type '", type, "'; expected site_distance, "
                                              "site_goal_distance, control_cost, joint_velocity_cost, "
                                              "alive_bonus, upright or body_height"));
    }
    return q;
  }

  absl::StatusOr<Condition> ParseCondition(const mjModel* m, const YAML::Node& node,
                                           const std::vector<Goal>& goals) const {
    ROBOLOOP_RETURN_IF_ERROR(CheckKeys(node, {"type", "site", "other_site", "goal", "body", "below", "above"}));
    Condition c;
    ROBOLOOP_ASSIGN_OR_RETURN(c.quantity, ParseQuantity(m, node, goals));
    if (static_cast<bool>(node["below"]) == static_cast<bool>(node["above"])) {
      return Error(node, "a condition needs exactly one of 'below' and 'above'");
    }
    c.below = static_cast<bool>(node["below"]);
    ROBOLOOP_ASSIGN_OR_RETURN(c.threshold, Get<double>(node, c.below ? "below" : "above"));
    return c;
  }

  absl::StatusOr<ObsSource> ParseObservation(const mjModel* m, const YAML::Node& node,
                                             const std::vector<Goal>& goals, ArraySpec* key) const {
    using Kind = ObsSource::Kind;
    ROBOLOOP_RETURN_IF_ERROR(CheckKeys(node, {"name", "site_pos", "body_pos", "body_quat", "joint_qpos",
                                              "joint_qvel", "sensor", "goal"}));
    ROBOLOOP_ASSIGN_OR_RETURN(key->name, Get<std::string>(node, "name"));
    if (node.size() != 2) return Error(node, "an observation needs its name and exactly one source");
    ObsSource s{Kind::kSitePos, 0, 3};
    if (node["site_pos"]) {
      ROBOLOOP_ASSIGN_OR_RETURN(s.index, Named(m, node, "site_pos", mjOBJ_SITE, "site"));
    } else if (node["body_pos"] || node["body_quat"]) {
      const bool quat = static_cast<bool>(node["body_quat"]);
      s = {quat ? Kind::kBodyQuat : Kind::kBodyPos, 0, quat ? 4 : 3};
      ROBOLOOP_ASSIGN_OR_RETURN(s.index, Named(m, node, quat ? "body_quat" : "body_pos", mjOBJ_BODY, "body"));
    } else if (node["joint_qpos"] || node["joint_qvel"]) {
      const bool pos = static_cast<bool>(node["joint_qpos"]);
      ROBOLOOP_ASSIGN_OR_RETURN(int joint, Named(m, node, pos ? "joint_qpos" : "joint_qvel", mjOBJ_JOINT, "joint"));
      const int type = m->jnt_type[joint];
      const int qpos_size = type == mjJNT_FREE ? 7 : type == mjJNT_BALL ? 4 : 1;
      const int qvel_size = type == mjJNT_FREE ? 6 : type == mjJNT_BALL ? 3 : 1;
      s = pos ? ObsSource{Kind::kJointQpos, m->jnt_qposadr[joint], qpos_size}
              : ObsSource{Kind::kJointQvel, m->jnt_dofadr[joint], qvel_size};
    } else if (node["sensor"]) {
      ROBOLOOP_ASSIGN_OR_RETURN(int sensor, Named(m, node, "sensor", mjOBJ_SENSOR, "sensor"));
      s = {Kind::kSensor, m->sensor_adr[sensor], m->sensor_dim[sensor]};
    } else {
      ROBOLOOP_ASSIGN_OR_RETURN(int mocap, GoalMocap(node, "goal", goals));
      s = {Kind::kGoal, mocap, 3};
    }
    key->shape = {s.size};
    return s;
  }

  absl::StatusOr<JointNoise> ParseNoise(const mjModel* m, const YAML::Node& node) const {
    ROBOLOOP_RETURN_IF_ERROR(CheckKeys(node, {"joint", "low", "high"}));
    ROBOLOOP_ASSIGN_OR_RETURN(int joint, Named(m, node, "joint", mjOBJ_JOINT, "joint"));
    if (m->jnt_type[joint] != mjJNT_HINGE && m->jnt_type[joint] != mjJNT_SLIDE) {
      return Error(node["joint"], "reset noise applies to hinge and slide joints only");
    }
    JointNoise noise{m->jnt_qposadr[joint], 0, 0};
    ROBOLOOP_ASSIGN_OR_RETURN(noise.low, Get<double>(node, "low"));
    ROBOLOOP_ASSIGN_OR_RETURN(noise.high, Get<double>(node, "high"));
    if (!(noise.low <= noise.high)) return Error(node, "low must not exceed high");
    return noise;
  }

  absl::StatusOr<SuccessRule> ParseSuccessRule(const YAML::Node& node) const {
    ROBOLOOP_ASSIGN_OR_RETURN(std::string rule, Get<std::string>(node, "rule"));
    if (rule == "every_step") return SuccessRule::EveryStep();
    ROBOLOOP_ASSIGN_OR_RETURN(int steps, Get<int>(node, "steps"));
    if (steps < 1) return Error(node["steps"], "steps must be >= 1");
    if (rule == "final_steps") return SuccessRule::FinalSteps(steps);
    if (rule == "held_for") return SuccessRule::HeldFor(steps);
    return Error(node["rule"], absl::StrCat("unknown rule '", rule, "'; expected every_step, final_steps or held_for"));
  }

  absl::Status ParseBody(const YAML::Node& root, TaskDefinition* def, YamlTaskSpec* spec) const {
    const mjModel* m = def->model.get();
    for (const YAML::Node& goal : root["goals"]) {
      ROBOLOOP_ASSIGN_OR_RETURN(Goal parsed, ParseGoal(m, goal));
      spec->goals.push_back(parsed);
    }
    if (!root["observations"] || root["observations"].size() == 0) {
      return Error(root, "at least one observation is required");
    }
    for (const YAML::Node& node : root["observations"]) {
      ArraySpec key;
      ROBOLOOP_ASSIGN_OR_RETURN(ObsSource source, ParseObservation(m, node, spec->goals, &key));
      if (def->obs_spec.offset(key.name) >= 0) return Error(node, absl::StrCat("duplicate observation '", key.name, "'"));
      def->obs_spec.keys.push_back(key);
      spec->observations.push_back(source);
    }
    for (const YAML::Node& node : root["reward"]) {
      ROBOLOOP_RETURN_IF_ERROR(CheckKeys(node, {"type", "site", "other_site", "goal", "body", "weight"}));
      RewardTerm term;
      ROBOLOOP_ASSIGN_OR_RETURN(term.quantity, ParseQuantity(m, node, spec->goals));
      ROBOLOOP_ASSIGN_OR_RETURN(term.weight, Get<double>(node, "weight"));
      spec->reward.push_back(term);
    }
    const YAML::Node success = root["success"];
    if (!success) return Error(root, "missing key 'success'");
    ROBOLOOP_RETURN_IF_ERROR(CheckKeys(success, {"condition", "rule", "steps"}));
    if (!success["condition"]) return Error(success, "missing key 'condition'");
    ROBOLOOP_ASSIGN_OR_RETURN(spec->success, ParseCondition(m, success["condition"], spec->goals));
    ROBOLOOP_ASSIGN_OR_RETURN(def->success, ParseSuccessRule(success));
    for (const YAML::Node& node : root["termination"]) {
      ROBOLOOP_ASSIGN_OR_RETURN(Condition c, ParseCondition(m, node, spec->goals));
      spec->termination.push_back(c);
    }
    for (const YAML::Node& node : root["reset_noise"]) {
      ROBOLOOP_ASSIGN_OR_RETURN(JointNoise noise, ParseNoise(m, node));
      spec->reset_noise.push_back(noise);
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::string task_;
};

absl::StatusOr<YAML::Node> ReadYaml(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot read YAML task ", path));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> LoadYamlTask(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(YAML::Node root, ReadYaml(path));
  YamlTaskParser top(path, "?");
  ROBOLOOP_RETURN_IF_ERROR(top.CheckKeys(root, {"name", "description", "mjcf", "control_substeps", "max_steps",
                                                "observations", "goals", "reward", "success", "termination",
                                                "reset_noise"}));
  TaskDefinition def;
  ROBOLOOP_ASSIGN_OR_RETURN(def.definition_source, ReadFile(path));
  ROBOLOOP_ASSIGN_OR_RETURN(def.name, top.Get<std::string>(root, "name"));
  YamlTaskParser parser(path, def.name);
  def.description = root["description"] ? root["description"].as<std::string>() : "";
  ROBOLOOP_ASSIGN_OR_RETURN(std::string mjcf, parser.Get<std::string>(root, "mjcf"));
  const std::filesystem::path mjcf_path = std::filesystem::path(path).parent_path() / mjcf;
  ROBOLOOP_ASSIGN_OR_RETURN(def.model, LoadModelFromFile(mjcf_path.string()));
  ROBOLOOP_ASSIGN_OR_RETURN(def.control_substeps, parser.Get<int>(root, "control_substeps"));
  ROBOLOOP_ASSIGN_OR_RETURN(def.max_steps, parser.Get<int>(root, "max_steps"));
  if (def.control_substeps < 1 || def.max_steps < 1) {
    return parser.Error(root, "control_substeps and max_steps must be >= 1");
  }
  def.action_spec = ActionSpecFromCtrlRange(def.model.get());
  YamlTaskSpec spec;
  ROBOLOOP_RETURN_IF_ERROR(parser.ParseBody(root, &def, &spec));
  return std::unique_ptr<Task>(new YamlTask(std::move(def), std::move(spec)));
}

absl::Status RegisterYamlTask(const std::string& path, TaskRegistry* registry) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, LoadYamlTask(path));
  return registry->Register(task->name(), task->description(), [path] { return LoadYamlTask(path); });
}

}  // namespace roboloop::sim
