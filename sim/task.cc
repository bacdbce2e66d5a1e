#include "sim/task.h"

#include "absl/strings/str_cat.h"

namespace roboloop::sim {

absl::Status Task::ObserveOrError(const mjModel* m, const mjData* data, float* obs) const {
  Observe(m, data, obs);
  return absl::OkStatus();
}

void Task::ObservePrivileged(const mjModel*, const mjData*, float*) const {}

bool Task::Terminated(const mjModel*, const mjData*) const { return false; }

void Task::ApplyAction(const mjModel* m, const float* action, mjData* data) const {
  for (int i = 0; i < m->nu; ++i) data->ctrl[i] = action[i];
}

absl::StatusOr<std::unique_ptr<Policy>> Task::MakeExpert() const {
  return absl::UnimplementedError(absl::StrCat("task ", name(), " has no scripted expert"));
}

ActionSpec ActionSpecFromCtrlRange(const mjModel* m) {
  ActionSpec spec;
  for (int i = 0; i < m->nu; ++i) {
    const bool limited = m->actuator_ctrllimited[i];
    spec.low.push_back(limited ? static_cast<float>(m->actuator_ctrlrange[2 * i]) : -1.0f);
    spec.high.push_back(limited ? static_cast<float>(m->actuator_ctrlrange[2 * i + 1]) : 1.0f);
  }
  return spec;
}

absl::Status CheckHasActuators(const mjModel* m) {
  if (m->nu > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "the model has no actuators (<actuator> elements): a task's actions drive its actuators, so it needs at least one");
}

absl::StatusOr<int> FindId(const mjModel* m, int type, const std::string& kind,
                           const std::string& name, const std::string& task) {
  const int id = mj_name2id(m, type, name.c_str());
  if (id < 0) {
    return absl::NotFoundError(
        absl::StrCat("task ", task, ": the model has no ", kind, " named '", name, "'"));
  }
  return id;
}

}  // namespace roboloop::sim
