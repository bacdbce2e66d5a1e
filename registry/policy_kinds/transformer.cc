// The "transformer" policy kind: a pre-norm encoder over observation tokens followed by learned
// action-query tokens. Its model is train/torch/policy/policy_transformer.cc.
#include "registry/builtin_policy_kinds.h"

namespace roboloop::registry {

PolicyKind TransformerPolicyKind() {
  PolicyKind kind;
  kind.name = "transformer";
  kind.summary = "encoder over observation tokens and learned action queries";
  kind.options = ChunkPolicyOptions();
  kind.options.push_back({"d_model", PolicyOptionType::kPositiveInteger, 128, {}, "token width"});
  kind.options.push_back({"layers", PolicyOptionType::kPositiveInteger, 4, {}, "encoder blocks"});
  kind.options.push_back({"heads", PolicyOptionType::kPositiveInteger, 4, {}, "attention heads (divide d_model)"});
  kind.options.push_back({"ffn", PolicyOptionType::kPositiveInteger, 512, {}, "feed-forward width of a block"});
  kind.options.push_back({"flow_matching", PolicyOptionType::kBoolean, false, {},
                          "predict the chunk with a flow-matching head instead of regression"});
  kind.options.push_back({"flow_steps", PolicyOptionType::kPositiveInteger, 10, {},
                          "Euler steps of the flow head at inference"});
  for (PolicyOption& option : CameraPolicyOptions()) kind.options.push_back(std::move(option));
  kind.trainable = true;
  kind.exportable = true;
  return kind;
}

}  // namespace roboloop::registry
