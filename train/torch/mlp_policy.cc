// MLP policies from a safetensors file, computed with the kernels' batch-invariant ops.
#include <string>
#include <vector>

#include "kernels/batch_invariant.h"
#include "train/safetensors.h"
#include "train/torch/inference_policy.h"

namespace roboloop::train {
namespace {

struct Layer {
  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]
};

kernels::Activation ParseActivation(const std::string& name) {
  if (name == "relu") return kernels::Activation::kRelu;
  if (name == "gelu") return kernels::Activation::kGelu;
  if (name == "silu") return kernels::Activation::kSilu;
  if (name == "tanh") return kernels::Activation::kTanh;
  TORCH_CHECK(false, "option activation: unknown '", name, "' (known: relu, gelu, silu, tanh)");
}

int PositiveInt(const nlohmann::json& options, const char* key) {
  TORCH_CHECK(options.contains(key) && options[key].is_number_integer() &&
                  options[key].get<int64_t>() > 0,
              "option ", key, " must be a positive integer, got ",
              options.contains(key) ? options[key].dump() : "nothing");
  return options[key].get<int>();
}

// Layer widths obs_dim, hidden..., action_dim.
std::vector<int64_t> LayerWidths(const nlohmann::json& options) {
  std::vector<int64_t> widths = {PositiveInt(options, "obs_dim")};
  const nlohmann::json hidden = options.value("hidden", nlohmann::json::array());
  TORCH_CHECK(hidden.is_array(), "option hidden must be an array of positive integers");
  for (const nlohmann::json& h : hidden) {
    TORCH_CHECK(h.is_number_integer() && h.get<int64_t>() > 0,
                "option hidden must hold positive integers, got ", h.dump());
    widths.push_back(h.get<int64_t>());
  }
  widths.push_back(PositiveInt(options, "action_dim"));
  return widths;
}

torch::Tensor TakeTensor(TensorMap& tensors, const std::string& name,
                         const std::vector<int64_t>& shape) {
  auto it = tensors.find(name);
  TORCH_CHECK(it != tensors.end(), "tensor ", name, " is missing");
  TORCH_CHECK(it->second.shape == shape, "tensor ", name, " has shape ",
              c10::IntArrayRef(it->second.shape), ", the options need ", c10::IntArrayRef(shape));
  torch::Tensor t = torch::from_blob(it->second.values.data(), shape, torch::kFloat).clone();
  tensors.erase(it);
  return t;
}

class MlpPolicy : public InferencePolicy {
 public:
  MlpPolicy(std::vector<Layer> layers, kernels::Activation activation)
      : layers_(std::move(layers)), activation_(activation) {}

  torch::Tensor Forward(const torch::Tensor& obs, bool batch_invariant) override {
    TORCH_CHECK(obs.size(1) == layers_.front().weight.size(1), "mlp takes obs_dim ",
                layers_.front().weight.size(1), ", got ", obs.size(1));
    torch::NoGradGuard no_grad;
    kernels::BatchInvariantScope scope(batch_invariant);
    torch::Tensor x = obs;
    for (size_t i = 0; i < layers_.size(); ++i) {
      x = kernels::Linear(x, layers_[i].weight, layers_[i].bias);
      if (i + 1 < layers_.size()) x = kernels::Activate(activation_, x);
    }
    return x;
  }

 private:
  std::vector<Layer> layers_;
  kernels::Activation activation_;
};

}  // namespace

std::unique_ptr<InferencePolicy> LoadMlpPolicy(const std::string& path,
                                               const nlohmann::json& options) {
  TORCH_CHECK(options.is_object(), "mlp options must be a JSON object, got ", options.dump());
  const std::vector<int64_t> widths = LayerWidths(options);
  const kernels::Activation activation = ParseActivation(options.value("activation", "relu"));
  absl::StatusOr<TensorMap> tensors = ReadSafetensors(path);
  TORCH_CHECK(tensors.ok(), tensors.status().message());
  std::vector<Layer> layers;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    const std::string prefix = "layers." + std::to_string(i);
    layers.push_back({TakeTensor(*tensors, prefix + ".weight", {widths[i + 1], widths[i]}),
                      TakeTensor(*tensors, prefix + ".bias", {widths[i + 1]})});
  }
  TORCH_CHECK(tensors->empty(), "tensor ", tensors->empty() ? "" : tensors->begin()->first,
              " is not part of an mlp with ", layers.size(), " layers");
  return std::make_unique<MlpPolicy>(std::move(layers), activation);
}

}  // namespace roboloop::train
