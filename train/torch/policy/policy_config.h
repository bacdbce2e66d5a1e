// Architecture options of the trainable policies (issue 6, req 2), parsed from the JSON a
// checkpoint manifest stores under policy.options. The options' defaults and types are the
// policy kind's schema (registry/policy_kinds/); this is their form for the models. Inside
// libroboloop_torch.so only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/batch_invariant.h"

namespace roboloop::train {

// Options of the `mlp` policy: flattened observation history -> flattened action chunk.
struct MlpOptions {
  std::vector<int64_t> hidden;                                 // hidden layer widths
  kernels::Activation activation = kernels::Activation::kRelu;  // after every layer but the last
};

// Options of the `transformer` policy: a pre-norm encoder over observation tokens followed by
// learned action-query tokens under a prefix-LM mask.
struct TransformerOptions {
  int64_t d_model = 0;         // token width
  int64_t layers = 0;          // encoder blocks
  int64_t heads = 0;           // attention heads (d_model must divide by it)
  int64_t ffn = 0;             // hidden width of each block's feed-forward network
  bool flow_matching = false;  // predict the chunk with a flow-matching head instead of regression
  int64_t flow_steps = 0;      // Euler integration steps of the flow head at inference
};

// Everything needed to rebuild a policy module.
struct PolicyConfig {
  std::string kind;          // a trainable policy kind (registry/policy_kind.h)
  int64_t obs_dim = 0;       // floats of one observation row
  int64_t action_dim = 0;    // floats of one action
  int64_t history = 1;       // observation steps the policy reads (current and history-1 past)
  int64_t chunk = 1;         // future actions it predicts per call
  MlpOptions mlp;            // the options of an mlp
  TransformerOptions transformer;  // the options of a transformer
};

// Parses the options of a trainable kind, {kind, obs_dim, action_dim, ...}, filling absent
// options with the kind's defaults; options of another kind are rejected. Throws c10::Error
// naming the option at fault (unknown kinds list the trainable ones).
PolicyConfig ParsePolicyConfig(const nlohmann::json& json);

}  // namespace roboloop::train
