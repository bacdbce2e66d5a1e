// Trainable policies (mlp, transformer, ...) for inference: a PolicyModel with weights from a
// safetensors file, wrapped in the normalization of its checkpoint.
#include <vector>

#include "kernels/batch_invariant.h"
#include "train/torch/inference_policy.h"
#include "train/torch/policy/policy_model.h"
#include "train/torch/trainer.h"

namespace roboloop::train {
namespace {

// mean and std of one side ("obs" or "action") of the normalization JSON, checked against dim.
std::pair<torch::Tensor, torch::Tensor> ReadStats(const nlohmann::json& normalization,
                                                  const char* side, int64_t dim) {
  TORCH_CHECK(normalization.contains(side) && normalization[side].is_object(),
              "normalization.", side, " is missing");
  std::pair<torch::Tensor, torch::Tensor> stats;
  for (const char* stat : {"mean", "std"}) {
    const nlohmann::json& values = normalization[side].value(stat, nlohmann::json());
    TORCH_CHECK(values.is_array() && static_cast<int64_t>(values.size()) == dim,
                "normalization.", side, ".", stat, " must hold ", dim, " numbers");
    torch::Tensor t = torch::tensor(values.get<std::vector<float>>(), torch::kFloat);
    (std::string(stat) == "mean" ? stats.first : stats.second) = t;
  }
  TORCH_CHECK((stats.second > 0).all().item<bool>(), "normalization.", side,
              ".std must be positive");
  return stats;
}

class TrainablePolicy : public InferencePolicy {
 public:
  TrainablePolicy(std::shared_ptr<PolicyModel> model, const nlohmann::json& normalization)
      : model_(std::move(model)) {
    model_->eval();
    const PolicyConfig& config = model_->config();
    if (normalization.is_null()) return;
    std::tie(obs_mean_, obs_std_) = ReadStats(normalization, "obs", config.obs_dim);
    std::tie(action_mean_, action_std_) = ReadStats(normalization, "action", config.action_dim);
  }

  int64_t history() const override { return model_->config().history; }
  int64_t chunk() const override { return model_->config().chunk; }

  torch::Tensor ForwardChunk(const torch::Tensor& obs, const torch::Tensor& history_length,
                             bool batch_invariant) override {
    torch::NoGradGuard no_grad;
    kernels::BatchInvariantScope scope(batch_invariant);
    const torch::Tensor input = obs_mean_.defined() ? (obs - obs_mean_) / obs_std_ : obs;
    const torch::Tensor output = model_->Act(input, history_length);
    return action_mean_.defined() ? output * action_std_ + action_mean_ : output;
  }

 private:
  std::shared_ptr<PolicyModel> model_;
  torch::Tensor obs_mean_, obs_std_, action_mean_, action_std_;
};

}  // namespace

torch::Tensor InferencePolicy::Forward(const torch::Tensor& obs, bool batch_invariant) {
  const torch::Tensor window = obs.unsqueeze(1).expand({obs.size(0), history(), obs.size(1)});
  const torch::Tensor lengths = torch::ones({obs.size(0)}, torch::kInt);
  return ForwardChunk(window.contiguous(), lengths, batch_invariant).select(1, 0);
}

std::unique_ptr<InferencePolicy> LoadTrainablePolicy(const std::string& path,
                                                     const std::string& kind,
                                                     const nlohmann::json& options) {
  TORCH_CHECK(options.is_object(), kind, " options must be a JSON object, got ", options.dump());
  nlohmann::json architecture = options;
  architecture.erase("normalization");
  if (!architecture.contains("kind")) architecture["kind"] = kind;
  TORCH_CHECK(architecture["kind"] == kind, "options say kind ", architecture["kind"].dump(),
              " but the policy is loaded as ", kind);
  const PolicyConfig config = ParsePolicyConfig(architecture);
  std::shared_ptr<PolicyModel> model = MakePolicyModel(config);
  LoadModuleWeights(*model, path);
  return std::make_unique<TrainablePolicy>(std::move(model),
                                           options.value("normalization", nlohmann::json()));
}

}  // namespace roboloop::train
