// Base of the scripted experts: a policy that maps each observation row independently
// (so results never depend on batching) through one per-row function.
#pragma once

#include <string>

#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// A Policy whose rows are computed by ActRow, with the task's specs.
class RowPolicy : public Policy {
 public:
  std::string name() const override { return name_; }
  const ObsSpec& obs_spec() const override { return obs_spec_; }
  const ActionSpec& action_spec() const override { return action_spec_; }
  absl::Status Act(const PolicyBatch& batch, float* actions) override;

 protected:
  // Copies `task`'s specs; `name` is the policy's name.
  RowPolicy(const Task& task, std::string name);
  // Writes one action row for one observation row.
  virtual void ActRow(const float* obs, float* action) const = 0;
  // `value` clipped to action dimension `dim`'s bounds.
  float Clip(int dim, double value) const;

 private:
  std::string name_;
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
};

// Mass, centre-of-mass distance from the body origin and inertia about the body's y axis
// through its origin, for a body that swings about a hinge at its origin.
struct SwingingBody {
  double mass = 0;       // kg
  double com_distance = 0;  // m
  double inertia = 0;    // kg m² about the hinge
};
// Reads SwingingBody of body `body_id` from the model.
SwingingBody ReadSwingingBody(const mjModel* m, int body_id);

}  // namespace roboloop::sim
