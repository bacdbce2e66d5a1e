// A uniform random policy whose action for (episode, step, dimension) is a pure function
// of its seed, so results do not depend on batching or threads.
#pragma once

#include <cstdint>
#include <string>

#include "sim/policy.h"
#include "sim/task.h"

namespace roboloop::sim {

// Draws each action dimension uniformly within the task's bounds.
class RandomPolicy : public Policy {
 public:
  // Specs are copied from `task`; `seed` selects the draws.
  RandomPolicy(const Task& task, uint64_t seed);

  std::string name() const override { return "random"; }
  const ObsSpec& obs_spec() const override { return obs_spec_; }
  const ActionSpec& action_spec() const override { return action_spec_; }
  absl::Status Act(const PolicyBatch& batch, float* actions) override;

 private:
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
  uint64_t seed_;
};

}  // namespace roboloop::sim
