// The `mlp` policy: the flattened observation history, followed by the image encoder's keypoints
// of every camera when the policy has cameras, through an MLP to the flattened chunk.
#include <string>
#include <vector>

#include "kernels/batch_invariant.h"
#include "train/torch/policy/image_encoder.h"
#include "train/torch/policy/policy_model.h"

namespace roboloop::train {
namespace {

// The architecture options of an mlp (its schema: registry/policy_kinds/mlp.cc).
struct MlpOptions {
  std::vector<int64_t> hidden;                                 // hidden layer widths
  kernels::Activation activation = kernels::Activation::kRelu;  // after every layer but the last
};

kernels::Activation ParseActivation(const std::string& name) {
  if (name == "relu") return kernels::Activation::kRelu;
  if (name == "gelu") return kernels::Activation::kGelu;
  if (name == "silu") return kernels::Activation::kSilu;
  if (name == "tanh") return kernels::Activation::kTanh;
  TORCH_CHECK(false, "policy option activation: unknown '", name, "' (known: relu, gelu, silu, tanh)");
}

MlpOptions ParseMlpOptions(const nlohmann::json& json) {
  MlpOptions options;
  options.hidden = json.at("hidden").get<std::vector<int64_t>>();
  options.activation = ParseActivation(json.at("activation").get<std::string>());
  return options;
}

class MlpModel : public PolicyModel {
 public:
  explicit MlpModel(const PolicyConfig& config) : config_(config), options_(ParseMlpOptions(config.options)) {
    const ImageEncoderOptions vision = ParseImageEncoderOptions(config.options);
    int64_t image_features = 0;
    if (!vision.cameras.empty()) {
      encoder_ = register_module("encoder", std::make_shared<ImageEncoder>(vision));
      image_features = static_cast<int64_t>(vision.cameras.size()) * encoder_->features();
    }
    std::vector<int64_t> widths = {config.obs_dim * config.history + image_features};
    widths.insert(widths.end(), options_.hidden.begin(), options_.hidden.end());
    widths.push_back(config.action_dim * config.chunk);
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      layers_->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
    }
    register_module("layers", layers_);
  }

  torch::Tensor Loss(const PolicyInputs& inputs, const LossOptions& options) override {
    return MaskedChunkLoss(Forward(inputs.obs, inputs.images, options.augment, options.generator),
                           inputs.actions, inputs.action_valid);
  }

  torch::Tensor Act(const torch::Tensor& obs, const torch::Tensor&, const torch::Tensor& images) override {
    torch::NoGradGuard no_grad;
    return Forward(obs, images, /*augment=*/false, torch::Generator());
  }

  const PolicyConfig& config() const override { return config_; }

 private:
  torch::Tensor Forward(const torch::Tensor& obs, const torch::Tensor& images, bool augment,
                        torch::Generator generator) {
    TORCH_CHECK(obs.dim() == 3 && obs.size(1) == config_.history && obs.size(2) == config_.obs_dim,
                "mlp policy takes obs [batch, history ", config_.history, ", obs_dim ",
                config_.obs_dim, "], got ", obs.sizes());
    torch::Tensor x = obs.reshape({obs.size(0), -1});
    if (encoder_) {
      const torch::Tensor keypoints = encoder_->Forward(images, augment, std::move(generator));
      x = torch::cat({x, keypoints.reshape({obs.size(0), -1}).to(x.scalar_type())}, 1);
    } else {
      CheckImageRows(images, obs.size(0), ImageEncoderOptions());
    }
    for (size_t i = 0; i < layers_->size(); ++i) {
      auto* linear = layers_[i]->as<torch::nn::Linear>();
      x = kernels::Linear(x, linear->weight, linear->bias);
      if (i + 1 < layers_->size()) x = kernels::Activate(options_.activation, x);
    }
    return x.reshape({obs.size(0), config_.chunk, config_.action_dim});
  }

  PolicyConfig config_;
  MlpOptions options_;
  std::shared_ptr<ImageEncoder> encoder_;  // null without cameras
  torch::nn::ModuleList layers_;
};

}  // namespace

std::shared_ptr<PolicyModel> MakeMlpModel(const PolicyConfig& config) {
  return std::make_shared<MlpModel>(config);
}

torch::Tensor MaskedChunkLoss(const torch::Tensor& prediction, const torch::Tensor& target,
                              const torch::Tensor& valid) {
  TORCH_CHECK(prediction.sizes() == target.sizes(), "prediction ", prediction.sizes(),
              " and target ", target.sizes(), " differ in shape");
  const torch::Tensor weights = valid.to(torch::kFloat);
  const torch::Tensor per_step = (prediction.to(torch::kFloat) - target).pow(2).mean(-1);
  const torch::Tensor per_sample = (per_step * weights).sum(-1) / weights.sum(-1);
  return per_sample.mean();
}


}  // namespace roboloop::train
