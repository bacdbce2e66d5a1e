// Inference policies inside libroboloop_torch.so: the models behind the ABI-2 policy handle.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace roboloop::train {

// Maps observations [batch, obs_dim] to actions. Implementations throw c10::Error or
// std::exception on bad input; the C edge (policy_abi.cc) turns them into messages. One
// Forward at a time.
class InferencePolicy {
 public:
  virtual ~InferencePolicy() = default;
  // Actions for `obs` (float32 [batch, obs_dim]). With `batch_invariant` each output row
  // depends only on its input row, bit for bit.
  virtual torch::Tensor Forward(const torch::Tensor& obs, bool batch_invariant) = 0;
};

// Loads a TorchScript file saved by torch.jit.save (scripted or traced). Throws naming the
// op when the file calls an op this LibTorch lacks.
std::unique_ptr<InferencePolicy> LoadTorchScriptPolicy(const std::string& path);

// Loads an MLP from the safetensors file `path` with `options` {obs_dim, action_dim,
// hidden, activation} (see train/torch_api.h). Throws naming the tensor or option at fault.
std::unique_ptr<InferencePolicy> LoadMlpPolicy(const std::string& path,
                                               const nlohmann::json& options);

}  // namespace roboloop::train
