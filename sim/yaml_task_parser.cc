#include "sim/yaml_task_parser.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/task_cameras.h"
#include "sim/yaml_fields.h"
#include "sim/yaml_task_goal.h"

namespace roboloop::sim {
namespace {

// The keys each reward or condition term type takes besides `type`.
const std::map<std::string, std::set<std::string>>& TermKeys() {
  static const auto* keys = new std::map<std::string, std::set<std::string>>{
      {"distance", {"from", "to"}},
      {"site_distance", {"site", "other_site"}},
      {"site_goal_distance", {"site", "goal"}},
      {"control_cost", {}},
      {"joint_velocity_cost", {}},
      {"alive_bonus", {}},
      {"upright", {"body"}},
      {"body_height", {"body"}},
      {"body_position", {"body", "component"}},
  };
  return *keys;
}

std::string TermTypes() {
  std::vector<std::string> types;
  for (const auto& [type, keys] : TermKeys()) types.push_back(type);
  return absl::StrJoin(types, ", ");
}

// OK when neither `camera`'s name nor its dataset image key (CameraImageKey) is already an
// observation's, a camera's or a camera's image key in `spec`; otherwise InvalidArgument.
absl::Status CheckCameraNamesFree(const ObsSpec& spec, const CameraSpec& camera) {
  std::set<std::string> taken;
  for (const ArraySpec& key : spec.keys) taken.insert(key.name);
  for (const CameraSpec& other : spec.cameras) taken.insert({other.name, CameraImageKey(other)});
  if (taken.count(camera.name) > 0) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate observation '", camera.name, "'"));
  }
  if (taken.count(CameraImageKey(camera)) > 0) {
    return absl::InvalidArgumentError(absl::StrCat("camera '", camera.name, "': its image key '",
                                                   CameraImageKey(camera), "' is taken by another observation"));
  }
  return absl::OkStatus();
}

std::optional<YamlPoint> MakePoint(YamlPoint::Kind kind, std::optional<int> index) {
  if (!index) return std::nullopt;
  return YamlPoint{kind, *index};
}

std::optional<YamlObsSource> MakeSource(YamlObsSource::Kind kind, std::optional<int> index, int size) {
  if (!index) return std::nullopt;
  return YamlObsSource{kind, *index, size};
}

// Parses one YAML task, recording every problem instead of stopping at the first.
class Parser {
 public:
  explicit Parser(std::string path) : path_(path), fields_(std::move(path)) {}

  absl::Status Parse(const YAML::Node& root, TaskDefinition* def, YamlTaskSpec* spec) {
    if (fields_.CheckKeys(root, "",
                          {"name", "description", "mjcf", "control_substeps", "max_steps", "observations", "cameras",
                           "goals", "reward", "success", "termination", "reset_noise"})) {
      ParseHeader(root, def);
      ParseGoals(root, spec);
      ParseObservations(root, def, spec);
      ParseCameras(root, def);
      ParseReward(root, spec);
      ParseSuccess(root, def, spec);
      for (const auto& [node, at] : fields_.List(root, "termination")) {
        if (auto condition = ParseCondition(node, at)) spec->termination.push_back(*condition);
      }
      for (const auto& [node, at] : fields_.List(root, "reset_noise")) {
        if (auto noise = ParseNoise(node, at)) spec->reset_noise.push_back(*noise);
      }
    }
    return fields_.Result(absl::StrCat("YAML task ", path_, " (task ", def->name.empty() ? "?" : def->name, ")"));
  }

 private:
  // The id of the model object named by `key`; nullopt (without a problem) when the model
  // did not compile.
  std::optional<int> Named(const YAML::Node& node, const std::string& at, const std::string& key, mjtObj type,
                           const std::string& kind) {
    std::optional<std::string> name = fields_.Get<std::string>(node, at, key);
    if (!name || model_ == nullptr) return std::nullopt;
    const int id = mj_name2id(model_, type, name->c_str());
    if (id < 0) {
      fields_.Problem(node[key], KeyPath(at, key),
                      absl::StrCat("the model has no ", kind, " named '", *name, "'"));
      return std::nullopt;
    }
    return id;
  }

  // The index in YamlTaskSpec::goals of the goal named by `key`; nullopt (without a second
  // problem) for a declared goal that failed to parse.
  std::optional<int> GoalRef(const YAML::Node& node, const std::string& at, const std::string& key) {
    std::optional<std::string> name = fields_.Get<std::string>(node, at, key);
    if (!name) return std::nullopt;
    const auto found = goal_index_.find(*name);
    if (found == goal_index_.end()) {
      fields_.Problem(node[key], KeyPath(at, key),
                      absl::StrCat("no goal named '", *name, "' is declared under goals"));
      return std::nullopt;
    }
    if (found->second < 0) return std::nullopt;
    return found->second;
  }

  // False (and a problem at node[name]) when `name` cannot be a dataset key (CheckDatasetName).
  bool DatasetName(const YAML::Node& node, const std::string& at, const std::string& name, const std::string& what) {
    const absl::Status checked = CheckDatasetName(name, what);
    if (!checked.ok()) fields_.Problem(node["name"], KeyPath(at, "name"), std::string(checked.message()));
    return checked.ok();
  }

  void ParseHeader(const YAML::Node& root, TaskDefinition* def) {
    if (auto name = fields_.Get<std::string>(root, "", "name")) {
      DatasetName(root, "", *name, "task name");
      def->name = *name;
    }
    if (root["description"]) {
      if (auto description = fields_.Get<std::string>(root, "", "description")) def->description = *description;
    }
    if (auto substeps = fields_.PositiveInt(root, "", "control_substeps")) def->control_substeps = *substeps;
    if (auto max_steps = fields_.PositiveInt(root, "", "max_steps")) def->max_steps = max_steps_ = *max_steps;
    std::optional<std::string> mjcf = fields_.Get<std::string>(root, "", "mjcf");
    if (!mjcf) return;
    const std::filesystem::path mjcf_path = std::filesystem::path(path_).parent_path() / *mjcf;
    absl::StatusOr<ModelPtr> model = LoadModelFromFile(mjcf_path.string());
    if (!model.ok()) {
      fields_.Problem(root["mjcf"], "mjcf", std::string(model.status().message()));
      return;
    }
    def->model = std::move(*model);
    model_ = def->model.get();
    def->action_spec = ActionSpecFromCtrlRange(model_);
    const absl::Status actuated = CheckHasActuators(model_);
    if (!actuated.ok()) fields_.Problem(root["mjcf"], "mjcf", absl::StrCat(*mjcf, ": ", actuated.message()));
  }

  std::optional<std::vector<double>> Box(const YAML::Node& node, const std::string& at, const std::string& key) {
    std::optional<std::vector<double>> values = fields_.Get<std::vector<double>>(node, at, key);
    if (values && values->size() != 3) {
      fields_.Problem(node[key], KeyPath(at, key), "needs 3 values (x, y, z)");
      return std::nullopt;
    }
    return values;
  }

  std::optional<YamlGoal> ParseGoal(const YAML::Node& node, const std::string& at, const std::string& name) {
    const bool mocap_key = static_cast<bool>(node["mocap_body"]);
    std::optional<int> body;
    if (mocap_key == static_cast<bool>(node["body"])) {
      fields_.Problem(node, at, "a goal needs exactly one of 'body' and 'mocap_body'");
    } else {
      body = Named(node, at, mocap_key ? "mocap_body" : "body", mjOBJ_BODY, "body");
    }
    std::optional<std::vector<double>> low = Box(node, at, "low");
    std::optional<std::vector<double>> high = Box(node, at, "high");
    if (!body || !low || !high) return std::nullopt;
    for (int k = 0; k < 3; ++k) {
      if (!((*low)[k] <= (*high)[k])) {
        fields_.Problem(node, at, "low must not exceed high");
        return std::nullopt;
      }
    }
    std::vector<std::string> problems;
    YamlGoal goal = ResolveGoal(model_, *body, mocap_key, low->data(), high->data(), &problems);
    for (const std::string& problem : problems) {
      fields_.Problem(node, at, absl::StrCat("goal '", name, "': ", problem));
    }
    if (!problems.empty()) return std::nullopt;
    return goal;
  }

  void ParseGoals(const YAML::Node& root, YamlTaskSpec* spec) {
    for (const auto& [node, at] : fields_.List(root, "goals")) {
      if (!fields_.CheckKeys(node, at, {"name", "mocap_body", "body", "low", "high"})) continue;
      std::optional<std::string> name = fields_.Get<std::string>(node, at, "name");
      std::optional<YamlGoal> goal = ParseGoal(node, at, name.value_or("?"));
      if (!name) continue;
      if (goal_index_.count(*name) > 0) {
        fields_.Problem(node["name"], KeyPath(at, "name"), absl::StrCat("duplicate goal '", *name, "'"));
        continue;
      }
      goal_index_[*name] = goal ? static_cast<int>(spec->goals.size()) : -1;
      if (goal) spec->goals.push_back(*goal);
    }
  }

  std::optional<YamlObsSource> ParseObsSource(const YAML::Node& node, const std::string& at) {
    using Kind = YamlObsSource::Kind;
    if (node.size() != (node["name"] ? 2u : 1u)) {
      fields_.Problem(node, at, "an observation needs its name and exactly one source");
      return std::nullopt;
    }
    if (node["site_pos"]) return MakeSource(Kind::kSitePos, Named(node, at, "site_pos", mjOBJ_SITE, "site"), 3);
    if (node["body_pos"]) return MakeSource(Kind::kBodyPos, Named(node, at, "body_pos", mjOBJ_BODY, "body"), 3);
    if (node["body_quat"]) return MakeSource(Kind::kBodyQuat, Named(node, at, "body_quat", mjOBJ_BODY, "body"), 4);
    if (node["goal"]) return MakeSource(Kind::kGoal, GoalRef(node, at, "goal"), 3);
    if (node["sensor"]) {
      std::optional<int> sensor = Named(node, at, "sensor", mjOBJ_SENSOR, "sensor");
      if (!sensor) return std::nullopt;
      return YamlObsSource{Kind::kSensor, model_->sensor_adr[*sensor], model_->sensor_dim[*sensor]};
    }
    const bool pos = static_cast<bool>(node["joint_qpos"]);
    if (!pos && !node["joint_qvel"]) return std::nullopt;  // an unknown key, already reported
    std::optional<int> joint = Named(node, at, pos ? "joint_qpos" : "joint_qvel", mjOBJ_JOINT, "joint");
    if (!joint) return std::nullopt;
    const int type = model_->jnt_type[*joint];
    if (pos) {
      return YamlObsSource{Kind::kJointQpos, model_->jnt_qposadr[*joint],
                           type == mjJNT_FREE   ? 7
                           : type == mjJNT_BALL ? 4
                                                : 1};
    }
    return YamlObsSource{Kind::kJointQvel, model_->jnt_dofadr[*joint],
                         type == mjJNT_FREE   ? 6
                         : type == mjJNT_BALL ? 3
                                              : 1};
  }

  void ParseObservations(const YAML::Node& root, TaskDefinition* def, YamlTaskSpec* spec) {
    if (!root["observations"] || root["observations"].size() == 0) {
      fields_.Problem(root, "observations", "at least one observation is required");
    }
    for (const auto& [node, at] : fields_.List(root, "observations")) {
      if (!fields_.CheckKeys(
              node, at,
              {"name", "site_pos", "body_pos", "body_quat", "joint_qpos", "joint_qvel", "sensor", "goal"})) {
        continue;
      }
      std::optional<std::string> name = fields_.Get<std::string>(node, at, "name");
      std::optional<YamlObsSource> source = ParseObsSource(node, at);
      if (!name || !source || !DatasetName(node, at, *name, "observation")) continue;
      if (def->obs_spec.offset(*name) >= 0) {
        fields_.Problem(node["name"], KeyPath(at, "name"), absl::StrCat("duplicate observation '", *name, "'"));
        continue;
      }
      def->obs_spec.keys.push_back(ArraySpec{*name, {source->size}});
      spec->observations.push_back(*source);
    }
  }

  // cameras: [{name, camera (optional; "" or absent = the free camera), width, height}].
  void ParseCameras(const YAML::Node& root, TaskDefinition* def) {
    const std::string who = absl::StrCat("task ", def->name.empty() ? "?" : def->name);
    for (const auto& [node, at] : fields_.List(root, "cameras")) {
      if (!fields_.CheckKeys(node, at, {"name", "camera", "width", "height"})) continue;
      std::optional<std::string> name = fields_.Get<std::string>(node, at, "name");
      std::optional<std::string> camera = node["camera"] && !node["camera"].IsNull()
                                              ? fields_.Get<std::string>(node, at, "camera")
                                              : std::optional<std::string>("");
      std::optional<int> width = fields_.Get<int>(node, at, "width");
      std::optional<int> height = fields_.Get<int>(node, at, "height");
      if (!name || !camera || !width || !height || !DatasetName(node, at, *name, "camera")) continue;
      const CameraSpec spec{*name, *camera, *width, *height};
      absl::Status checked = model_ == nullptr ? ValidateCameraSize(spec, who) : CheckCamera(model_, spec, who);
      if (checked.ok()) checked = CheckCameraNamesFree(def->obs_spec, spec);
      if (!checked.ok()) {
        fields_.Problem(node, at, std::string(checked.message()));
        continue;
      }
      def->obs_spec.cameras.push_back(spec);
    }
  }

  // A point under `key`: {site: s}, {body: b} or {goal: g}.
  std::optional<YamlPoint> ParsePoint(const YAML::Node& parent, const std::string& parent_at,
                                      const std::string& key) {
    const YAML::Node node = parent[key];
    const std::string at = KeyPath(parent_at, key);
    if (!node) {
      fields_.Problem(parent, parent_at, absl::StrCat("missing key '", key, "'"));
      return std::nullopt;
    }
    if (!fields_.CheckKeys(node, at, {"site", "body", "goal"})) return std::nullopt;
    if (node.size() != 1) {
      fields_.Problem(node, at, "a point needs exactly one of 'site', 'body' and 'goal'");
      return std::nullopt;
    }
    if (node["site"]) return MakePoint(YamlPoint::Kind::kSite, Named(node, at, "site", mjOBJ_SITE, "site"));
    if (node["body"]) return MakePoint(YamlPoint::Kind::kBody, Named(node, at, "body", mjOBJ_BODY, "body"));
    if (node["goal"]) return MakePoint(YamlPoint::Kind::kGoal, GoalRef(node, at, "goal"));
    return std::nullopt;
  }

  std::optional<int> Component(const YAML::Node& node, const std::string& at) {
    std::optional<std::string> component = fields_.Get<std::string>(node, at, "component");
    if (!component) return std::nullopt;
    if (*component == "x" || *component == "y" || *component == "z") return (*component)[0] - 'x';
    fields_.Problem(node["component"], KeyPath(at, "component"),
                    absl::StrCat("unknown component '", *component, "'; expected x, y or z"));
    return std::nullopt;
  }

  bool SetDistance(std::optional<YamlPoint> from, std::optional<YamlPoint> to, YamlQuantity* q) {
    q->kind = YamlQuantity::Kind::kDistance;
    if (!from || !to) return false;
    q->from = *from;
    q->to = *to;
    return true;
  }

  bool SetBody(YamlQuantity::Kind kind, std::optional<int> body, std::optional<int> component, YamlQuantity* q) {
    q->kind = kind;
    if (!body || !component) return false;
    q->body = *body;
    q->component = *component;
    return true;
  }

  // Parses a term's `type` and its keys; `extra_keys` are the keys its context adds.
  std::optional<YamlQuantity> ParseQuantity(const YAML::Node& node, const std::string& at,
                                            const std::set<std::string>& extra_keys) {
    using Kind = YamlQuantity::Kind;
    if (!node.IsMap()) {
      fields_.Problem(node, at, "expected a mapping");
      return std::nullopt;
    }
    std::optional<std::string> type = fields_.Get<std::string>(node, at, "type");
    if (!type) return std::nullopt;
    const auto found = TermKeys().find(*type);
    if (found == TermKeys().end()) {
      fields_.Problem(node["type"], KeyPath(at, "type"),
                      absl::StrCat("unknown term type '", *type, "'; expected one of: ", TermTypes()));
      return std::nullopt;
    }
    std::set<std::string> allowed = found->second;
    allowed.insert("type");
    allowed.insert(extra_keys.begin(), extra_keys.end());
    fields_.CheckKeys(node, at, allowed);
    YamlQuantity q;
    bool ok = true;
    if (*type == "distance") {
      std::optional<YamlPoint> from = ParsePoint(node, at, "from");
      ok = SetDistance(from, ParsePoint(node, at, "to"), &q);
    } else if (*type == "site_distance") {
      std::optional<YamlPoint> site =
          MakePoint(YamlPoint::Kind::kSite, Named(node, at, "site", mjOBJ_SITE, "site"));
      ok = SetDistance(site, MakePoint(YamlPoint::Kind::kSite, Named(node, at, "other_site", mjOBJ_SITE, "site")),
                       &q);
    } else if (*type == "site_goal_distance") {
      std::optional<YamlPoint> site =
          MakePoint(YamlPoint::Kind::kSite, Named(node, at, "site", mjOBJ_SITE, "site"));
      ok = SetDistance(site, MakePoint(YamlPoint::Kind::kGoal, GoalRef(node, at, "goal")), &q);
    } else if (*type == "control_cost") {
      q.kind = Kind::kControlCost;
    } else if (*type == "joint_velocity_cost") {
      q.kind = Kind::kJointVelocityCost;
    } else if (*type == "alive_bonus") {
      q.kind = Kind::kAlive;
    } else if (*type == "upright") {
      ok = SetBody(Kind::kUpright, Named(node, at, "body", mjOBJ_BODY, "body"), 2, &q);
    } else if (*type == "body_height") {
      ok = SetBody(Kind::kBodyPosition, Named(node, at, "body", mjOBJ_BODY, "body"), 2, &q);
    } else {
      std::optional<int> body = Named(node, at, "body", mjOBJ_BODY, "body");
      ok = SetBody(Kind::kBodyPosition, body, Component(node, at), &q);
    }
    if (!ok) return std::nullopt;
    return q;
  }

  std::optional<YamlCondition> ParseCondition(const YAML::Node& node, const std::string& at) {
    std::optional<YamlQuantity> quantity = ParseQuantity(node, at, {"below", "above"});
    if (!node.IsMap()) return std::nullopt;
    const bool below = static_cast<bool>(node["below"]);
    if (below == static_cast<bool>(node["above"])) {
      fields_.Problem(node, at, "a condition needs exactly one of 'below' and 'above'");
      return std::nullopt;
    }
    std::optional<double> threshold = fields_.Get<double>(node, at, below ? "below" : "above");
    if (!quantity || !threshold) return std::nullopt;
    return YamlCondition{*quantity, below, *threshold};
  }

  void ParseReward(const YAML::Node& root, YamlTaskSpec* spec) {
    for (const auto& [node, at] : fields_.List(root, "reward")) {
      std::optional<YamlQuantity> quantity = ParseQuantity(node, at, {"weight"});
      if (!node.IsMap()) continue;
      std::optional<double> weight = fields_.Get<double>(node, at, "weight");
      if (quantity && weight) spec->reward.push_back(YamlRewardTerm{*quantity, *weight});
    }
  }

  std::optional<SuccessRule> ParseSuccessRule(const YAML::Node& node) {
    std::optional<std::string> rule = fields_.Get<std::string>(node, "success", "rule");
    if (!rule) return std::nullopt;
    if (*rule == "every_step") return SuccessRule::EveryStep();
    if (*rule != "final_steps" && *rule != "held_for") {
      fields_.Problem(node["rule"], "success.rule",
                      absl::StrCat("unknown rule '", *rule, "'; expected every_step, final_steps or held_for"));
      return std::nullopt;
    }
    std::optional<int> steps = fields_.PositiveInt(node, "success", "steps");
    if (!steps) return std::nullopt;
    if (max_steps_ > 0 && *steps > max_steps_) {
      fields_.Problem(node["steps"], "success.steps",
                      absl::StrCat(*steps, " steps exceed max_steps ", max_steps_, ": no episode could succeed"));
      return std::nullopt;
    }
    return *rule == "final_steps" ? SuccessRule::FinalSteps(*steps) : SuccessRule::HeldFor(*steps);
  }

  void ParseSuccess(const YAML::Node& root, TaskDefinition* def, YamlTaskSpec* spec) {
    const YAML::Node success = root["success"];
    if (!success) {
      fields_.Problem(root, "", "missing key 'success'");
      return;
    }
    if (!fields_.CheckKeys(success, "success", {"condition", "rule", "steps"})) return;
    if (!success["condition"]) {
      fields_.Problem(success, "success", "missing key 'condition'");
    } else if (auto condition = ParseCondition(success["condition"], "success.condition")) {
      spec->success = *condition;
    }
    if (auto rule = ParseSuccessRule(success)) def->success = *rule;
  }

  std::optional<YamlJointNoise> ParseNoise(const YAML::Node& node, const std::string& at) {
    if (!fields_.CheckKeys(node, at, {"joint", "low", "high"})) return std::nullopt;
    std::optional<int> joint = Named(node, at, "joint", mjOBJ_JOINT, "joint");
    std::optional<double> low = fields_.Get<double>(node, at, "low");
    std::optional<double> high = fields_.Get<double>(node, at, "high");
    if (joint && model_->jnt_type[*joint] != mjJNT_HINGE && model_->jnt_type[*joint] != mjJNT_SLIDE) {
      fields_.Problem(node["joint"], KeyPath(at, "joint"), "reset noise applies to hinge and slide joints only");
      return std::nullopt;
    }
    if (low && high && !(*low <= *high)) fields_.Problem(node, at, "low must not exceed high");
    if (!joint || !low || !high || !(*low <= *high)) return std::nullopt;
    return YamlJointNoise{model_->jnt_qposadr[*joint], *low, *high};
  }

  std::string path_;
  const mjModel* model_ = nullptr;         // set once the MJCF compiled
  int max_steps_ = 0;                      // the task's horizon once read; 0 = not (validly) given
  std::map<std::string, int> goal_index_;  // declared goal -> index in spec goals, -1 if invalid
  YamlFields fields_;
};

}  // namespace

absl::Status ParseYamlTask(const std::string& path, const YAML::Node& root, TaskDefinition* def,
                           YamlTaskSpec* spec) {
  return Parser(path).Parse(root, def, spec);
}

}  // namespace roboloop::sim
