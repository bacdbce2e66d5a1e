#include "sim/random_policy.h"

#include "sim/rng.h"

namespace roboloop::sim {

RandomPolicy::RandomPolicy(const Task& task, uint64_t seed)
    : obs_spec_(task.obs_spec()), action_spec_(task.action_spec()), seed_(seed) {}

absl::Status RandomPolicy::Act(const PolicyBatch& batch, float* actions) {
  const int size = action_spec_.size();
  for (int row = 0; row < batch.batch; ++row) {
    for (int dim = 0; dim < size; ++dim) {
      const double u = CounterUniform(seed_, batch.episode_index[row], batch.step[row], dim);
      const float low = action_spec_.low[dim], high = action_spec_.high[dim];
      actions[row * size + dim] = static_cast<float>(low + (high - low) * u);
    }
  }
  return absl::OkStatus();
}

}  // namespace roboloop::sim
