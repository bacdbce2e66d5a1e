#include "train/torch/policy_normalization.h"

#include <string>
#include <utility>
#include <vector>

namespace roboloop::train {
namespace {

// mean and std of one side ("obs" or "action") of the normalization JSON, checked against dim.
std::pair<torch::Tensor, torch::Tensor> ReadStats(const nlohmann::json& normalization, const char* side,
                                                  int64_t dim) {
  TORCH_CHECK(normalization.contains(side) && normalization[side].is_object(), "normalization.", side,
              " is missing");
  std::pair<torch::Tensor, torch::Tensor> stats;
  for (const char* stat : {"mean", "std"}) {
    const nlohmann::json& values = normalization[side].value(stat, nlohmann::json());
    const int64_t expected = dim >= 0 ? dim : static_cast<int64_t>(normalization[side].value("mean", nlohmann::json()).size());
    TORCH_CHECK(values.is_array() && static_cast<int64_t>(values.size()) == expected, "normalization.", side, ".",
                stat, " must hold ", expected, " numbers");
    torch::Tensor t = torch::tensor(values.get<std::vector<float>>(), torch::kFloat);
    (std::string(stat) == "mean" ? stats.first : stats.second) = t;
  }
  TORCH_CHECK((stats.second > 0).all().item<bool>(), "normalization.", side, ".std must be positive");
  return stats;
}

}  // namespace

PolicyNormalization PolicyNormalization::FromJson(const nlohmann::json& normalization, int64_t obs_dim,
                                                  int64_t action_dim) {
  PolicyNormalization result;
  if (normalization.is_null() || normalization.empty()) return result;
  std::tie(result.obs_mean_, result.obs_std_) = ReadStats(normalization, "obs", obs_dim);
  std::tie(result.action_mean_, result.action_std_) = ReadStats(normalization, "action", action_dim);
  return result;
}

torch::Tensor PolicyNormalization::NormalizeObs(const torch::Tensor& obs) const {
  return obs_mean_.defined() ? (obs - obs_mean_) / obs_std_ : obs;
}

torch::Tensor PolicyNormalization::DenormalizeActions(const torch::Tensor& actions) const {
  return action_mean_.defined() ? actions * action_std_ + action_mean_ : actions;
}

}  // namespace roboloop::train
