#include "sim/experts/row_policy.h"

#include <algorithm>
#include <cmath>

namespace roboloop::sim {

RowPolicy::RowPolicy(const Task& task, std::string name)
    : name_(std::move(name)), obs_spec_(task.obs_spec()), action_spec_(task.action_spec()) {}

absl::Status RowPolicy::Act(const PolicyBatch& batch, float* actions) {
  const int obs_size = obs_spec_.size();
  const int action_size = action_spec_.size();
  for (int row = 0; row < batch.batch; ++row) {
    ActRow(batch.obs + static_cast<size_t>(row) * obs_size,
           actions + static_cast<size_t>(row) * action_size);
  }
  return absl::OkStatus();
}

float RowPolicy::Clip(int dim, double value) const {
  return std::clamp(static_cast<float>(value), action_spec_.low[dim], action_spec_.high[dim]);
}

SwingingBody ReadSwingingBody(const mjModel* m, int body_id) {
  SwingingBody body;
  body.mass = m->body_mass[body_id];
  const mjtNum* com = &m->body_ipos[3 * body_id];
  body.com_distance = std::sqrt(com[0] * com[0] + com[1] * com[1] + com[2] * com[2]);
  // Bodies here are symmetric about their long axis, so the x/y principal moments agree.
  body.inertia = m->body_inertia[3 * body_id + 1] + body.mass * body.com_distance * body.com_distance;
  return body;
}

}  // namespace roboloop::sim
