// The task API (issue 4, req 1): a task owns one immutable MuJoCo model and defines the
// observation and action specs, control substeps, seeded reset, observation, reward,
// success, termination and truncation. Envs share the model; each has its own mjData.
#pragma once

#include <memory>
#include <string>

#include <mujoco/mujoco.h>

#include "absl/status/statusor.h"
#include "sim/mujoco_guard.h"
#include "sim/policy.h"
#include "sim/rng.h"
#include "sim/spec.h"

namespace roboloop::sim {

// How a per-step success condition becomes an episode's success.
struct SuccessRule {
  enum class Kind {
    kEveryStep,   // true at every step of a full-length episode
    kFinalSteps,  // true at each of the final `steps` steps
    kHeldFor,     // true for `steps` consecutive steps at any time
  };
  Kind kind = Kind::kFinalSteps;  // which rule
  int steps = 1;                  // window for kFinalSteps / kHeldFor

  // Condition at every step.
  static SuccessRule EveryStep() { return {Kind::kEveryStep, 0}; }
  // Condition at each of the last `k` steps.
  static SuccessRule FinalSteps(int k) { return {Kind::kFinalSteps, k}; }
  // Condition held for `k` consecutive steps.
  static SuccessRule HeldFor(int k) { return {Kind::kHeldFor, k}; }
};

// Everything fixed about a task, built once by its factory.
struct TaskDefinition {
  std::string name;              // registry name, e.g. "cartpole-swingup"
  std::string description;       // one paragraph including success and termination
  ModelPtr model;                // compiled MJCF, owned by the task
  ObsSpec obs_spec;              // observation layout
  ActionSpec action_spec;        // action bounds (actions are clipped to them)
  int control_substeps = 1;      // physics steps per env step
  int max_steps = 1000;          // truncation horizon in env steps
  SuccessRule success;           // how SuccessCondition turns into episode success
  std::string definition_source; // text defining behaviour beyond the model (a YAML task's file)
  ObsSpec privileged_spec;       // float keys hidden from learned policies that only the task's
                                 // scripted expert reads (a vision task's goal); usually empty
};

// A task definition plus its behaviour. All methods are const and must be safe to call
// concurrently for different mjData (they are, for all tasks in this module: tasks keep
// no per-episode state; goals live in mjData, e.g. as mocap bodies, so a state restores
// them). Methods take the model explicitly because an env may run on a randomised copy.
class Task {
 public:
  virtual ~Task() = default;

  const std::string& name() const { return def_.name; }
  const std::string& description() const { return def_.description; }
  // The shared immutable model.
  const mjModel* model() const { return def_.model.get(); }
  const ObsSpec& obs_spec() const { return def_.obs_spec; }
  // The privileged state the task's expert reads (no cameras; empty for most tasks).
  const ObsSpec& privileged_spec() const { return def_.privileged_spec; }
  const ActionSpec& action_spec() const { return def_.action_spec; }
  int control_substeps() const { return def_.control_substeps; }
  int max_steps() const { return def_.max_steps; }
  const SuccessRule& success_rule() const { return def_.success; }
  // Text defining the task's behaviour beyond its model ("" for C++ tasks, whose code and
  // description define it); part of the task definition hash.
  const std::string& definition_source() const { return def_.definition_source; }
  // Seconds of simulated time per env step.
  double control_dt() const { return def_.control_substeps * model()->opt.timestep; }

  // Sets the episode's initial state (noise, goals) drawing only from `rng`. `data` was
  // just reset to the model's defaults; the caller runs mj_forward afterwards.
  virtual void Reset(const mjModel* m, mjData* data, Rng& rng) const = 0;
  // Writes obs_spec().size() floats describing `data` (after mj_forward or mj_step).
  virtual void Observe(const mjModel* m, const mjData* data, float* obs) const = 0;
  // Observe, for callers that can stop on an error: an error instead of an observation when the
  // task's code misbehaved (a plug-in that wrote past its observation buffer). Envs and relabelling
  // call this one. Default: Observe, then OK.
  virtual absl::Status ObserveOrError(const mjModel* m, const mjData* data, float* obs) const;
  // Writes privileged_spec().size() floats of state hidden from learned policies (called only
  // when that spec is not empty). Default: nothing.
  virtual void ObservePrivileged(const mjModel* m, const mjData* data, float* privileged) const;
  // The reward of the step that led to `data`.
  virtual double Reward(const mjModel* m, const mjData* data) const = 0;
  // The per-step success condition, combined over the episode by success_rule().
  virtual bool SuccessCondition(const mjModel* m, const mjData* data) const = 0;
  // True when the episode must end now (before the horizon). Default: never.
  virtual bool Terminated(const mjModel* m, const mjData* data) const;
  // Writes a clipped, finite action into the controls. Default: ctrl[i] = action[i].
  virtual void ApplyAction(const mjModel* m, const float* action, mjData* data) const;
  // A scripted expert for this task; Unimplemented when the task has none.
  virtual absl::StatusOr<std::unique_ptr<Policy>> MakeExpert() const;

 protected:
  // Takes ownership of a complete definition; subclasses validate it in their factory.
  explicit Task(TaskDefinition definition) : def_(std::move(definition)) {}

 private:
  TaskDefinition def_;
};

// An ActionSpec from the model's actuator control ranges (unlimited ones get ±1).
ActionSpec ActionSpecFromCtrlRange(const mjModel* m);

// InvalidArgument when `m` has no actuators: a task's actions drive its actuators, so a task
// without one could record no actions. Loaders of YAML and plug-in tasks check their models.
absl::Status CheckHasActuators(const mjModel* m);

// Id of the named MuJoCo object of type `type` (mjOBJ_*) in `m`, or NotFound naming the
// task, the kind of object (`kind`, e.g. "site") and the name.
absl::StatusOr<int> FindId(const mjModel* m, int type, const std::string& kind,
                           const std::string& name, const std::string& task);

}  // namespace roboloop::sim
