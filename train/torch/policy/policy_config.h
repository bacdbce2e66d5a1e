// Architecture options of the trainable policies (issue 6, req 2), parsed from the JSON a
// checkpoint manifest stores under policy.options. Inside libroboloop_torch.so only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/batch_invariant.h"

namespace roboloop::train {

// Options of the `mlp` policy: flattened observation history -> flattened action chunk.
struct MlpOptions {
  std::vector<int64_t> hidden = {256, 256};                   // hidden layer widths
  kernels::Activation activation = kernels::Activation::kRelu;  // after every layer but the last
};

// Options of the `transformer` policy: a pre-norm encoder over observation tokens followed by
// learned action-query tokens under a prefix-LM mask.
struct TransformerOptions {
  int64_t d_model = 128;       // token width
  int64_t layers = 4;          // encoder blocks
  int64_t heads = 4;           // attention heads (d_model must divide by it)
  int64_t ffn = 512;           // hidden width of each block's feed-forward network
  bool flow_matching = false;  // predict the chunk with a flow-matching head instead of regression
  int64_t flow_steps = 10;     // Euler integration steps of the flow head at inference
};

// Everything needed to rebuild a policy module.
struct PolicyConfig {
  std::string kind = "mlp";  // "mlp" or "transformer"
  int64_t obs_dim = 0;       // floats of one observation row
  int64_t action_dim = 0;    // floats of one action
  int64_t history = 1;       // observation steps the policy reads (current and history-1 past)
  int64_t chunk = 1;         // future actions it predicts per call
  MlpOptions mlp;            // used when kind == "mlp"
  TransformerOptions transformer;  // used when kind == "transformer"
};

// The known policy kinds, for error messages.
const std::vector<std::string>& TrainablePolicyKinds();

// Parses {kind, obs_dim, action_dim, history, chunk, hidden, activation, d_model, layers,
// heads, ffn, flow_matching, flow_steps}; keys of the other kind are rejected. Throws
// c10::Error naming the option at fault (unknown kinds list the known ones).
PolicyConfig ParsePolicyConfig(const nlohmann::json& json);

// The inverse of ParsePolicyConfig: every option of the config's kind, spelled out.
nlohmann::json PolicyConfigToJson(const PolicyConfig& config);

// Name of an activation as ParsePolicyConfig reads it.
std::string ActivationName(kernels::Activation activation);

}  // namespace roboloop::train
