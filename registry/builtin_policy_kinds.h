// The policy kinds roboloop ships (registry/policy_kinds/<kind>.cc, one file each).
#pragma once

#include <vector>

#include "registry/policy_kind.h"

namespace roboloop::registry {

// registry/policy_kinds/mlp.cc: a multilayer perceptron over the flattened history.
PolicyKind MlpPolicyKind();
// registry/policy_kinds/transformer.cc: an encoder over observation tokens and action queries.
PolicyKind TransformerPolicyKind();
// registry/policy_kinds/torchscript.cc: a torch.jit.save file, run as it is.
PolicyKind TorchScriptPolicyKind();

// Every built-in kind, registered before any other (registry/policy_kind.cc).
std::vector<PolicyKind> BuiltinPolicyKinds();

}  // namespace roboloop::registry
