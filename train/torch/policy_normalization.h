// The normalization of a checkpoint (train/normalization.h JSON) applied around a policy model
// inside libroboloop_torch.so: observations are normalized before the model, actions
// denormalized after it. Trainable and TorchScript policies share it.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace roboloop::train {

// Per-element mean and std of observations and actions; identity when built from null or {}.
class PolicyNormalization {
 public:
  // Reads {"obs": {mean, std}, "action": {mean, std}}; null or {} is the identity. A dim >= 0
  // is the length each side's arrays must have; a negative dim only requires mean and std of
  // equal length. Throws c10::Error naming the key at fault (e.g. "normalization.obs.std").
  static PolicyNormalization FromJson(const nlohmann::json& normalization, int64_t obs_dim, int64_t action_dim);

  // (obs - mean) / std over the last dimension; `obs` unchanged for the identity.
  torch::Tensor NormalizeObs(const torch::Tensor& obs) const;
  // actions * std + mean over the last dimension; `actions` unchanged for the identity.
  torch::Tensor DenormalizeActions(const torch::Tensor& actions) const;

 private:
  torch::Tensor obs_mean_, obs_std_, action_mean_, action_std_;
};

}  // namespace roboloop::train
