// The models of this torch library, one registration line per trainable kind; a kind's options
// schema lives in registry/policy_kinds/ (docs/policy-kinds.md, "Adding a policy kind").
#include <map>
#include <string>

#include "train/torch/policy/policy_model.h"

namespace roboloop::train {
namespace {

const std::map<std::string, PolicyModelFactory>& PolicyModelFactories() {
  static const auto* const kModels = new std::map<std::string, PolicyModelFactory>{
      {"mlp", MakeMlpModel},
      {"transformer", MakeTransformerModel},
  };
  return *kModels;
}

}  // namespace

LossNoise PolicyModel::DrawLossNoise(int64_t, torch::Generator) const { return {}; }

std::shared_ptr<PolicyModel> MakePolicyModel(const PolicyConfig& config) {
  auto factory = PolicyModelFactories().find(config.kind);
  TORCH_CHECK(factory != PolicyModelFactories().end(), "policy kind '", config.kind,
              "' has no model in this torch library");
  return factory->second(config);
}

}  // namespace roboloop::train
