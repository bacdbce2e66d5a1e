#include "sim/neural_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "train/torch_runtime.h"

namespace roboloop::sim {
namespace {

// Runs a TorchPolicy on the engine's batches. Not thread-safe (Policy's contract: one Act at
// a time).
class NeuralPolicy : public Policy {
 public:
  NeuralPolicy(std::unique_ptr<train::TorchPolicy> model, bool batch_invariant, ObsSpec obs_spec,
               ActionSpec action_spec)
      : model_(std::move(model)),
        batch_invariant_(batch_invariant),
        obs_spec_(std::move(obs_spec)),
        action_spec_(std::move(action_spec)) {}

  std::string name() const override { return model_->path(); }
  const ObsSpec& obs_spec() const override { return obs_spec_; }
  const ActionSpec& action_spec() const override { return action_spec_; }

  absl::Status Act(const PolicyBatch& batch, float* actions) override {
    return model_->Act(batch.obs, batch.batch, obs_spec_.size(), actions, action_spec_.size(),
                       batch_invariant_);
  }

 private:
  std::unique_ptr<train::TorchPolicy> model_;
  bool batch_invariant_;
  ObsSpec obs_spec_;
  ActionSpec action_spec_;
};

// Runs `model` once on a zero observation of the task's size.
absl::Status CheckFitsTask(train::TorchPolicy& model, const ObsSpec& obs_spec,
                           const ActionSpec& action_spec) {
  std::vector<float> obs(static_cast<size_t>(obs_spec.size()), 0.0f);
  std::vector<float> action(static_cast<size_t>(action_spec.size()), 0.0f);
  absl::Status status =
      model.Act(obs.data(), 1, obs_spec.size(), action.data(), action_spec.size(), false);
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrCat(
      "policy ", model.path(), " does not fit the task (observation ", DescribeObsSpec(obs_spec),
      " = ", obs_spec.size(), " floats, ", action_spec.size(), " action dims): ",
      status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> LoadNeuralPolicy(const std::string& path,
                                                         const NeuralPolicyOptions& options,
                                                         const ObsSpec& obs_spec,
                                                         const ActionSpec& action_spec) {
  if (obs_spec.size() <= 0 || action_spec.size() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("policy ", path, ": the task's observation and action must be non-empty"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<train::TorchPolicy> model,
                            runtime->LoadPolicy(path, options.kind, options.model_options_json));
  ROBOLOOP_RETURN_IF_ERROR(CheckFitsTask(*model, obs_spec, action_spec));
  return std::unique_ptr<Policy>(
      new NeuralPolicy(std::move(model), options.batch_invariant, obs_spec, action_spec));
}

}  // namespace roboloop::sim
