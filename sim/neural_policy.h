// Neural policies in the rollout loop (issue 4, req 7): a torch-free sim::Policy that runs a
// model living behind the torch boundary (train/torch_runtime.h, ARCHITECTURE §1). Loading
// one maps libroboloop_torch.so on first use; sim itself never includes LibTorch.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/policy.h"
#include "sim/spec.h"

namespace roboloop::sim {

// How a neural policy is loaded and run.
struct NeuralPolicyOptions {
  // "torchscript" (a torch.jit.save file) or "mlp" (a safetensors file).
  std::string kind = "torchscript";
  // JSON options of the kind (train/torch_api.h), e.g. mlp {obs_dim, action_dim, hidden,
  // activation}.
  std::string model_options_json = "{}";
  // Each row's action independent of the batch it is in (ARCHITECTURE §5); slower for TorchScript.
  bool batch_invariant = true;
};

// Loads the policy file `path` and checks it against the task's specs by running it once on
// a zero observation: the policy must read obs_spec.size() floats and write
// action_spec.size() actions. Errors name the file: absent, corrupt, an op LibTorch lacks,
// dims that do not fit the task, or the torch library that cannot be loaded. The policy's
// obs_spec()/action_spec() are the given ones; its name is `path`.
absl::StatusOr<std::unique_ptr<Policy>> LoadNeuralPolicy(const std::string& path,
                                                         const NeuralPolicyOptions& options,
                                                         const ObsSpec& obs_spec,
                                                         const ActionSpec& action_spec);

}  // namespace roboloop::sim
