// The "torchscript" policy kind: a file saved by torch.jit.save (scripted or traced) that maps
// obs [batch, obs_dim] to actions [batch, action_dim]. Its loader is
// train/torch/torchscript_policy.cc; it has no options, reads one step and writes one action, and
// runs between the checkpoint's normalization when the manifest has one.
#include "registry/builtin_policy_kinds.h"

namespace roboloop::registry {

PolicyKind TorchScriptPolicyKind() {
  PolicyKind kind;
  kind.name = "torchscript";
  kind.summary = "a torch.jit.save file run as it is (one observation in, one action out)";
  kind.blob_suffix = ".pt";
  kind.weights = PolicyWeights::kTorchScriptModule;
  return kind;
}

}  // namespace roboloop::registry
