// The "mlp" policy kind: obs history (flattened) -> hidden layers -> action chunk (flattened).
// Its model is train/torch/policy/policy_mlp.cc.
#include "registry/builtin_policy_kinds.h"

namespace roboloop::registry {

PolicyKind MlpPolicyKind() {
  PolicyKind kind;
  kind.name = "mlp";
  kind.summary = "multilayer perceptron over the flattened observation history";
  kind.options = ChunkPolicyOptions();
  kind.options.push_back({"hidden", PolicyOptionType::kPositiveIntegerList, nlohmann::json::array({256, 256}), {},
                          "hidden layer widths"});
  kind.options.push_back({"activation", PolicyOptionType::kString, "relu", {"relu", "gelu", "silu", "tanh"},
                          "activation after every layer but the last"});
  for (PolicyOption& option : CameraPolicyOptions()) kind.options.push_back(std::move(option));
  kind.trainable = true;
  kind.exportable = true;
  return kind;
}

}  // namespace roboloop::registry
