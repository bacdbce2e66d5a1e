#include "sim/yaml_task.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "sim/task_cameras.h"
#include "sim/yaml_task_parser.h"
#include "sim/yaml_task_spec.h"
#include "yaml-cpp/yaml.h"

namespace roboloop::sim {
namespace {

class YamlTask : public Task {
 public:
  YamlTask(TaskDefinition def, YamlTaskSpec spec) : Task(std::move(def)), spec_(std::move(spec)) {}

  void Reset(const mjModel* m, mjData* d, Rng& rng) const override {
    for (const YamlJointNoise& noise : spec_.reset_noise) {
      d->qpos[noise.qpos_adr] += rng.Uniform(noise.low, noise.high);
    }
    for (const YamlGoal& goal : spec_.goals) PlaceGoal(goal, m, d, rng);
  }

  void Observe(const mjModel* m, const mjData* d, float* obs) const override {
    for (const YamlObsSource& source : spec_.observations) {
      ObserveSource(source, spec_, m, d, obs);
      obs += source.size;
    }
  }

  double Reward(const mjModel* m, const mjData* d) const override {
    double reward = 0.0;
    for (const YamlRewardTerm& term : spec_.reward) reward += term.weight * Evaluate(term.quantity, spec_, m, d);
    return reward;
  }

  bool SuccessCondition(const mjModel* m, const mjData* d) const override {
    return Holds(spec_.success, spec_, m, d);
  }

  bool Terminated(const mjModel* m, const mjData* d) const override {
    for (const YamlCondition& c : spec_.termination) {
      if (Holds(c, spec_, m, d)) return true;
    }
    return false;
  }

 private:
  YamlTaskSpec spec_;
};

absl::StatusOr<YAML::Node> ReadYaml(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot read YAML task ", path, ": ", std::strerror(errno)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Task>> LoadYamlTask(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(YAML::Node root, ReadYaml(path));
  TaskDefinition def;
  YamlTaskSpec spec;
  ROBOLOOP_RETURN_IF_ERROR(ParseYamlTask(path, root, &def, &spec));
  ROBOLOOP_RETURN_IF_ERROR(PrepareTaskCameras(&def, absl::StrCat("YAML task ", path, " (task ", def.name, ")")));
  ROBOLOOP_ASSIGN_OR_RETURN(def.definition_source, ReadFile(path));
  return std::unique_ptr<Task>(new YamlTask(std::move(def), std::move(spec)));
}

absl::Status RegisterYamlTask(const std::string& path, TaskRegistry* registry) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto task, LoadYamlTask(path));
  return Annotate(registry->Register(task->name(), task->description(), [path] { return LoadYamlTask(path); }),
                  absl::StrCat("YAML task ", path));
}

}  // namespace roboloop::sim
