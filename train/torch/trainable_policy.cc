// Trainable policies (mlp, transformer, ...) for inference: a PolicyModel with weights from a
// safetensors file, wrapped in the normalization of its checkpoint.
#include <vector>

#include "kernels/batch_invariant.h"
#include "train/torch/inference_policy.h"
#include "train/torch/policy_normalization.h"
#include "train/torch/policy/image_encoder.h"
#include "train/torch/policy/policy_model.h"
#include "train/torch/trainer.h"

namespace roboloop::train {
namespace {

class TrainablePolicy : public InferencePolicy {
 public:
  TrainablePolicy(std::shared_ptr<PolicyModel> model, const nlohmann::json& normalization)
      : model_(std::move(model)),
        normalization_(PolicyNormalization::FromJson(normalization, model_->config().obs_dim,
                                                     model_->config().action_dim)) {
    model_->eval();
  }

  int64_t history() const override { return model_->config().history; }
  int64_t chunk() const override { return model_->config().chunk; }
  int64_t image_bytes() const override { return image_bytes_; }

  torch::Tensor ForwardChunk(const torch::Tensor& obs, const torch::Tensor& history_length,
                             const torch::Tensor& images, bool batch_invariant) override {
    torch::NoGradGuard no_grad;
    kernels::BatchInvariantScope scope(batch_invariant);
    return normalization_.DenormalizeActions(
        model_->Act(normalization_.NormalizeObs(obs), history_length, images));
  }

 private:
  std::shared_ptr<PolicyModel> model_;
  PolicyNormalization normalization_;
  int64_t image_bytes_ = ParseImageEncoderOptions(model_->config().options).image_bytes();
};

}  // namespace

torch::Tensor InferencePolicy::Forward(const torch::Tensor& obs, bool batch_invariant) {
  const torch::Tensor window = obs.unsqueeze(1).expand({obs.size(0), history(), obs.size(1)});
  const torch::Tensor lengths = torch::ones({obs.size(0)}, torch::kInt);
  return ForwardChunk(window.contiguous(), lengths, torch::Tensor(), batch_invariant).select(1, 0);
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
